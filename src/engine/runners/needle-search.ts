/**
 * NeedleSearch finds, in one pass over a buffer whatever the number of needles, the longest needle that
 * starts at each offset. It is an Aho-Corasick automaton over the reversed needles, run from the end of
 * the buffer backwards: a needle starting at offset i is then a match ending at i, and the automaton
 * knows the longest match ending where it stands. One `indexOf` pass per needle would cost needles ×
 * bytes instead: a few hundred secrets, each in all its printed forms, made that seconds per MiB of output.
 */
export class NeedleSearch {
  /** Bytes of the longest needle (0 when there is none). */
  readonly longest: number;
  /** The root's transitions, dense (0: stay at the root): most bytes of ordinary output never leave it. */
  private readonly rootNext = new Int32Array(256);
  /** The other states' transitions, as child and sibling lists: almost every state has a single child. */
  private readonly edgeByte: Uint8Array;
  private readonly firstChild: Int32Array;
  private readonly nextSibling: Int32Array;
  private readonly fail: Int32Array;
  /** Bytes of the longest needle that is a suffix of the state's path (0 when none is). */
  private readonly matchLength: Int32Array;

  constructor(needles: Buffer[]) {
    const trie = buildReversedTrie(
      needles.filter((n) => n.length > 0),
      this.rootNext,
    );
    this.edgeByte = Uint8Array.from(trie.edgeByte);
    this.firstChild = Int32Array.from(trie.firstChild);
    this.nextSibling = Int32Array.from(trie.nextSibling);
    this.fail = new Int32Array(trie.terminal.length);
    this.matchLength = new Int32Array(trie.terminal.length);
    this.linkFailures(trie.terminal);
    this.longest = needles.reduce((max, n) => Math.max(max, n.length), 0);
  }

  get isEmpty(): boolean {
    return this.longest === 0;
  }

  /** longestAt is, for each offset of `buf`, the length of the longest needle starting there within `buf` (0: none). */
  longestAt(buf: Buffer): Int32Array {
    const lengths = new Int32Array(buf.length);
    let state = 0;
    for (let i = buf.length - 1; i >= 0; i--) {
      state = this.next(state, buf[i]);
      lengths[i] = this.matchLength[state];
    }
    return lengths;
  }

  private child(state: number, byte: number): number {
    if (state === 0) return this.rootNext[byte] || -1;
    for (let c = this.firstChild[state]; c !== -1; c = this.nextSibling[c]) if (this.edgeByte[c] === byte) return c;
    return -1;
  }

  private next(state: number, byte: number): number {
    for (;;) {
      const c = this.child(state, byte);
      if (c !== -1) return c;
      if (state === 0) return 0;
      state = this.fail[state];
    }
  }

  /** Breadth first, so that a state's failure link and its match length are known before its children need them. */
  private linkFailures(terminal: number[]) {
    const order = [0];
    for (let q = 0; q < order.length; q++) {
      const state = order[q];
      for (let c = this.firstChild[state]; c !== -1; c = this.nextSibling[c]) {
        this.fail[c] = state === 0 ? 0 : this.next(this.fail[state], this.edgeByte[c]);
        this.matchLength[c] = terminal[c] || this.matchLength[this.fail[c]];
        order.push(c);
      }
    }
  }
}

interface Trie {
  edgeByte: number[];
  firstChild: number[];
  nextSibling: number[];
  /** Length of the needle ending at each state (0: none does). */
  terminal: number[];
}

function buildReversedTrie(needles: Buffer[], rootNext: Int32Array): Trie {
  const trie: Trie = { edgeByte: [0], firstChild: [-1], nextSibling: [-1], terminal: [0] };
  for (const needle of needles) {
    let state = 0;
    for (let i = needle.length - 1; i >= 0; i--) state = childOrNew(trie, rootNext, state, needle[i]);
    trie.terminal[state] = needle.length;
  }
  return trie;
}

function childOrNew(trie: Trie, rootNext: Int32Array, state: number, byte: number): number {
  let c = trie.firstChild[state];
  while (c !== -1 && trie.edgeByte[c] !== byte) c = trie.nextSibling[c];
  if (c !== -1) return c;
  c = trie.terminal.length;
  trie.edgeByte.push(byte);
  trie.firstChild.push(-1);
  trie.nextSibling.push(trie.firstChild[state]);
  trie.terminal.push(0);
  trie.firstChild[state] = c;
  if (state === 0) rootNext[byte] = c;
  return c;
}
