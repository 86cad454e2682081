import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NeedleSearch } from './needle-search.ts';

const b = (s: string) => Buffer.from(s, 'latin1');

/** The definition, one needle and one offset at a time. */
function longestAtByDefinition(needles: Buffer[], buf: Buffer): number[] {
  return [...buf].map((_, i) => needles.reduce((max, n) => (n.length > max && buf.subarray(i, i + n.length).equals(n) ? n.length : max), 0));
}

function randomText(random: () => number, alphabet: string, length: number): string {
  return Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
}

/** A small seeded generator, so that a failure can be replayed. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('NeedleSearch', () => {
  it('gives the longest needle starting at each offset: a needle that is a prefix or a suffix of another included', () => {
    const search = new NeedleSearch([b('abc'), b('abcde'), b('cde'), b('bc')]);
    assert.deepEqual([...search.longestAt(b('xabcdex'))], [0, 5, 2, 3, 0, 0, 0]);
    assert.equal(search.longest, 5);
  });

  it('finds nothing with no needles, and ignores an empty needle', () => {
    assert.deepEqual([...new NeedleSearch([]).longestAt(b('abc'))], [0, 0, 0]);
    assert.ok(new NeedleSearch([b('')]).isEmpty);
  });

  it('agrees with the definition on random needles and texts over a small alphabet (many overlaps)', () => {
    const random = seeded(7);
    for (let round = 0; round < 300; round++) {
      const needles = Array.from({ length: 1 + Math.floor(random() * 8) }, () => b(randomText(random, 'ab\xffc', 1 + Math.floor(random() * 6))));
      const text = b(randomText(random, 'ab\xffc', Math.floor(random() * 60)));
      assert.deepEqual(
        [...new NeedleSearch(needles).longestAt(text)],
        longestAtByDefinition(needles, text),
        `needles ${needles.map((n) => n.toString('latin1'))} text ${text.toString('latin1')}`,
      );
    }
  });
});
