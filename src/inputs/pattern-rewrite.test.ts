import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { rewriteForSearch } from './pattern-rewrite.ts';

const DOT = '[^\\n\\r\\x{2028}\\x{2029}]';

/** Every BMP code point but the surrogates, which a stored value never holds alone. */
function* bmp(): Generator<string> {
  for (let c = 0; c <= 0xffff; c++) if (c < 0xd800 || c > 0xdfff) yield String.fromCharCode(c);
}

/** Pattern text rich in what the rewrite reads: escapes, classes, groups, flags, quoting. */
const PIECES = [
  'a',
  'b',
  '.',
  '\\s',
  '\\S',
  '\\',
  '[',
  ']',
  '^',
  '-',
  '(',
  ')',
  '(?s)',
  '(?-s)',
  '(?s:',
  '(?i)',
  '(?P<n>',
  '(?:',
  '[:alpha:]',
  '\\Q',
  '\\E',
  '*',
  '+',
  '?',
  '{2}',
  '|',
  '$',
  '\\n',
  ' ',
];
/** Values on which RE2's own `.` and `\s` agree with ECMAScript's: no `\r`, no non-ASCII space. */
const VALUES = fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\n', '-', 'x', ':'), maxLength: 12 });

/** The code points where RE2, given the rewritten pattern, and ECMAScript disagree. */
function disagreements(pattern: string): string[] {
  const re2 = RE2JS.compile(rewriteForSearch(pattern));
  const ecma = new RegExp(pattern);
  return [...bmp()].filter((c) => re2.test(c) !== ecma.test(c)).map((c) => `U+${c.charCodeAt(0).toString(16)}`);
}

describe('rewriteForSearch', () => {
  it('matches exactly what ECMAScript matches with `.`, `\\s` and `\\S`, inside classes and out', () => {
    for (const pattern of ['^.$', '^\\s$', '^\\S$', '^[\\s]$', '^[^\\s]$', '^[\\S]$', '^[^\\S]$', '^[\\sa]$', '^[^\\S\\n]$']) {
      assert.deepEqual(disagreements(pattern), [], pattern);
    }
  });

  it('leaves everything else as it is', () => {
    for (const pattern of ['^[a-z][a-z0-9-]{0,62}$', '\\.', '[.]', '\\Q.\\s\\E', '[[:space:]]', '\\pL', '(?s).', '(?s:.)']) {
      assert.equal(rewriteForSearch(pattern), pattern);
    }
    assert.equal(rewriteForSearch('\\\\.'), `\\\\${DOT}`, 'an escaped backslash does not escape the dot after it');
  });

  it('follows (?s) to the end of its group, and (?-s) back', () => {
    assert.equal(rewriteForSearch('((?s).).'), `(?:(?s).)${DOT}`);
    assert.equal(rewriteForSearch('(?s:.)(?:.)'), `(?s:.)(?:${DOT})`);
    assert.equal(rewriteForSearch('(?s).(?-s).'), `(?s).(?-s)${DOT}`);
    assert.equal(rewriteForSearch('(?is)(?P<x>.)'), '(?is)(?P<x>.)');
  });

  it('turns capturing groups into plain ones, and leaves named groups to RE2', () => {
    assert.equal(rewriteForSearch('^(a|b)+(?:c)(?P<d>e)\\(f\\)[(]$'), '^(?:a|b)+(?:c)(?P<d>e)\\(f\\)[(]$');
    assert.throws(() => RE2JS.compile(rewriteForSearch('(?P<x>a)(?P<x>b)')), /duplicate capture group name/);
  });

  it('changes no answer where RE2 and ECMAScript agree, and compiles whenever the pattern does', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 12 }), fc.array(VALUES, { minLength: 1, maxLength: 5 }), (pieces, values) => {
        const pattern = pieces.join('');
        let original: RE2JS;
        try {
          original = RE2JS.compile(pattern);
        } catch {
          return;
        }
        const rewritten = RE2JS.compile(rewriteForSearch(pattern));
        for (const value of values) assert.equal(rewritten.test(value), original.test(value), `${pattern} on ${JSON.stringify(value)}`);
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps a dash after a class escape literal', () => {
    const re = RE2JS.compile(rewriteForSearch('^[\\s-z]+$'));
    assert.equal(re.test(' -z'), true);
    assert.equal(re.test('y'), false);
  });

  it('reads a class as RE2 does: a leading ] is literal, [:name:] nests', () => {
    for (const [pattern, value, expected] of [
      ['^[]\\s]+$', '] ', true],
      ['^[^]\\s]+$', 'ab', true],
      ['^[[:alpha:]\\s]+$', 'a b', true],
      ['^[[:alpha:]].$', 'a\r', false],
    ] as const) {
      assert.equal(RE2JS.compile(rewriteForSearch(pattern)).test(value), expected, pattern);
    }
  });
});
