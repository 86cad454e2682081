/**
 * What RE2 compiles is the user's pattern rewritten in two ways that change no answer to "does it
 * match?", the only question a pattern is asked:
 * - RE2 and ECMAScript (the dialect of JSON Schema's `pattern`) read the same text differently in two
 *   places patterns lean on: RE2's `.` also matches `\r`, U+2028 and U+2029, and its `\s` is ASCII
 *   whitespace only. `^.{1,64}$` and `^\S+$` are written to refuse those characters, so `.` (where
 *   `(?s)` is not in effect), `\s` and `\S` become the classes ECMAScript gives them.
 * - A group `(…)` becomes `(?:…)`: nothing reads what it captures, and a capture costs instructions
 *   that every step of a match carries. Named groups stay, so that RE2 still refuses a duplicate name.
 * Everything else keeps RE2's own meaning.
 */

/** ECMAScript's WhiteSpace and LineTerminator code points, as RE2 class ranges. */
const SPACE = '\\t-\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
/** Every code point SPACE leaves out: `\S` inside a class, where `[^…]` cannot nest. */
const NOT_SPACE =
  '\\x{0}-\\x{8}\\x{e}-\\x{1f}\\x{21}-\\x{9f}\\x{a1}-\\x{167f}\\x{1681}-\\x{1fff}\\x{200b}-\\x{2027}' +
  '\\x{202a}-\\x{202e}\\x{2030}-\\x{205e}\\x{2060}-\\x{2fff}\\x{3001}-\\x{fefe}\\x{ff00}-\\x{10ffff}';
/** ECMAScript's `.` without the `s` flag: anything but a line terminator. */
const DOT = '[^\\n\\r\\x{2028}\\x{2029}]';

/** `(?flags)` or `(?flags:`, as RE2 writes them: the only groups that can switch `s` on or off. */
const FLAG_GROUP = /\(\?([imsU]*)(?:-([imsU]*))?([:)])/y;

interface GroupOpening {
  /** The rewritten opening, and how much of the pattern it stands for. */
  text: string;
  length: number;
  /** Whether `s` is in effect after the opening, and whether only up to the end of this group. */
  dotAll: boolean;
  scoped: boolean;
}

function openGroup(pattern: string, start: number, dotAll: boolean): GroupOpening {
  if (pattern[start + 1] !== '?') return { text: '(?:', length: 1, dotAll, scoped: true };
  FLAG_GROUP.lastIndex = start;
  const flags = FLAG_GROUP.exec(pattern);
  if (!flags) return { text: '(', length: 1, dotAll, scoped: true };
  return { text: flags[0], length: flags[0].length, dotAll: dotAllAfter(flags[1], flags[2], dotAll), scoped: flags[3] === ':' };
}

/** Where the class opening at `start` ends (after its `]`), by RE2's rules: a leading `]` is literal, `[:name:]` nests. */
function classEnd(pattern: string, start: number): number {
  let i = start + 1;
  if (pattern[i] === '^') i++;
  for (let first = true; i < pattern.length && (pattern[i] !== ']' || first); first = false) {
    const posixEnd = pattern.startsWith('[:', i) ? pattern.indexOf(':]', i + 2) : -1;
    if (posixEnd >= 0) i = posixEnd + 2;
    else i += pattern[i] === '\\' ? 2 : 1;
  }
  return i + 1;
}

function rewriteClass(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; ) {
    const escaped = text[i] === '\\' ? text[i + 1] : undefined;
    if (escaped !== 's' && escaped !== 'S') {
      const width = escaped === undefined ? 1 : 2;
      out += text.slice(i, i + width);
      i += width;
      continue;
    }
    out += escaped === 's' ? SPACE : NOT_SPACE;
    i += 2;
    // After a class escape RE2 reads `-` as itself; after the ranges that replace it, it would open a range.
    if (text[i] === '-') {
      out += '\\-';
      i++;
    }
  }
  return out;
}

/** An escape outside a class and where the text after it starts; `\Q…\E` is literal text, kept whole. */
function rewriteEscape(pattern: string, start: number): [string, number] {
  const escaped = pattern[start + 1];
  if (escaped === 's') return [`[${SPACE}]`, start + 2];
  if (escaped === 'S') return [`[^${SPACE}]`, start + 2];
  if (escaped === 'Q') {
    const close = pattern.indexOf('\\E', start + 2);
    const end = close < 0 ? pattern.length : close + 2;
    return [pattern.slice(start, end), end];
  }
  return [pattern.slice(start, start + 2), start + 2];
}

/** Whether `s` is in effect after a flag group, given whether it was before. */
function dotAllAfter(on: string, off: string | undefined, before: boolean): boolean {
  if (on.includes('s')) return true;
  if (off?.includes('s')) return false;
  return before;
}

/**
 * rewriteForSearch returns the pattern with `.`, `\s` and `\S` spelled as ECMAScript means them and
 * no capturing group. It expects a pattern RE2 compiles, and keeps it compilable.
 */
export function rewriteForSearch(pattern: string): string {
  // Whether `(?s)` is in effect, per open group: a flag group changes it up to the end of its group.
  const dotAll = [false];
  let out = '';
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i];
    if (c === '\\') {
      const [text, next] = rewriteEscape(pattern, i);
      out += text;
      i = next;
    } else if (c === '[') {
      const end = classEnd(pattern, i);
      out += rewriteClass(pattern.slice(i, end));
      i = end;
    } else if (c === '(') {
      const group = openGroup(pattern, i, dotAll[dotAll.length - 1]);
      if (group.scoped) dotAll.push(group.dotAll);
      else dotAll[dotAll.length - 1] = group.dotAll;
      out += group.text;
      i += group.length;
    } else {
      if (c === ')' && dotAll.length > 1) dotAll.pop();
      out += c === '.' && !dotAll[dotAll.length - 1] ? DOT : c;
      i++;
    }
  }
  return out;
}
