import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { matchPattern, MAX_PATTERN_LENGTH, MAX_PROGRAM_SIZE, patternProblem } from './patterns.ts';

/** Shapes that backtrack catastrophically in ECMAScript's engine, each with a value that makes them. */
const HOSTILE: [string, string][] = [
  ['(a+)+$', 'a'.repeat(64) + '!'],
  ['(a|aa)+$', 'a'.repeat(64) + '!'],
  ['(.*a){20}', 'a'.repeat(19) + '!'.repeat(64)],
  ['^(a|a)*$', 'a'.repeat(64) + '!'],
  ['^(\\w+\\s?)*$', 'word '.repeat(20) + '!'],
  ['(x+x+)+y', 'x'.repeat(64)],
];

describe('patternProblem', () => {
  it('accepts ordinary patterns, and the shapes that backtrack in ECMAScript', () => {
    for (const pattern of ['^[a-z][a-z0-9-]{0,62}$', '^subnet-[0-9a-f]+$', '^.{1,256}$', '(?i)^prod', ...HOSTILE.map(([p]) => p)]) {
      assert.equal(patternProblem(pattern), undefined, pattern);
    }
  });

  it('refuses what RE2 cannot compile, quoting RE2 and naming its syntax', () => {
    const cases: [string, RegExp][] = [
      ['^(a)\\1$', /invalid escape sequence: `\\1`/],
      ['^(?=a)', /unsupported Perl syntax: `\(\?=`/],
      ['(?!a)b', /unsupported Perl syntax: `\(\?!`/],
      ['(?<=a)b', /invalid named capture/],
      ['(', /missing closing \)/],
      ['x{1001}', /invalid repeat count/],
    ];
    for (const [pattern, reason] of cases) {
      const problem = patternProblem(pattern);
      assert.match(problem!, /^is not a valid regular expression \(.*\); patterns are RE2 syntax, without backreferences or lookaround$/, pattern);
      assert.match(problem!, reason, pattern);
    }
  });

  it('a syntax error quotes the pattern as written, not as rewritten', () => {
    assert.doesNotMatch(patternProblem('\\s[')!, /x\{a0\}/);
  });

  it('refuses overlong patterns and patterns that compile to too many instructions', () => {
    assert.equal(patternProblem('a'.repeat(MAX_PATTERN_LENGTH + 1)), `is longer than ${MAX_PATTERN_LENGTH} characters`);
    assert.equal(patternProblem('(a|aa){300}'), `compiles to more than ${MAX_PROGRAM_SIZE} instructions; use smaller repetition counts`);
    assert.equal(patternProblem('(a|aa){100}'), undefined);
  });
});

describe('matchPattern', () => {
  it('searches the value, as JSON Schema does: ^ and $ anchor it at the ends of the whole value', () => {
    assert.equal(matchPattern('b', 'abc'), 'match');
    assert.equal(matchPattern('^b', 'abc'), 'no-match');
    assert.equal(matchPattern('^abc$', 'abc'), 'match');
    assert.equal(matchPattern('^abc$', 'abc\n'), 'no-match', '$ is the end of the value, not of a line');
    assert.equal(matchPattern('^b', 'a\nb'), 'no-match');
    assert.equal(matchPattern('(?m)^b$', 'a\nb'), 'match');
  });

  it('is case-sensitive unless the pattern says (?i)', () => {
    assert.equal(matchPattern('^prod$', 'PROD'), 'no-match');
    assert.equal(matchPattern('(?i)^prod$', 'PROD'), 'match');
  });

  it('counts code points: an astral character is one', () => {
    assert.equal(matchPattern('^.$', '😀'), 'match');
    assert.equal(matchPattern('^.{2}$', '😀'), 'no-match');
  });

  it("keeps ECMAScript's `.`: no line terminator, unless (?s)", () => {
    for (const terminator of ['\n', '\r', '\u2028', '\u2029']) {
      assert.equal(matchPattern('^a.b$', `a${terminator}b`), 'no-match', JSON.stringify(terminator));
      assert.equal(matchPattern('(?s)^a.b$', `a${terminator}b`), 'match', JSON.stringify(terminator));
    }
    assert.equal(matchPattern('^a[.]b$', 'a.b'), 'match');
    assert.equal(matchPattern('^a\\.b$', 'axb'), 'no-match');
  });

  it("keeps ECMAScript's `\\s` and `\\S`: Unicode spaces and line terminators", () => {
    for (const space of ['\u000b', '\u00a0', '\u2003', '\u3000', '\ufeff', '\u2028']) {
      assert.equal(matchPattern('^\\S+$', `a${space}b`), 'no-match', JSON.stringify(space));
      assert.equal(matchPattern('^a\\sb$', `a${space}b`), 'match', JSON.stringify(space));
    }
  });

  it('answers hostile shapes on hostile values in linear time', () => {
    for (const [pattern, value] of HOSTILE) {
      const long = value.repeat(1000);
      const started = performance.now();
      matchPattern(pattern, long);
      const ms = performance.now() - started;
      assert.ok(ms < 500, `${pattern} on ${long.length} characters: ${ms} ms`);
    }
  });

  it('a pattern that may not be stored is invalid, never a pass', () => {
    assert.equal(matchPattern('^(a)\\1$', 'aa'), 'invalid');
    assert.equal(matchPattern('(a|aa){300}', 'a'), 'invalid');
  });
});
