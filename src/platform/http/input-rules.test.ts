import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exceedsJsonDepth, parseJsonBody, textProblem, treeProblems } from './input-rules.ts';

describe('input rules', () => {
  it('depth counts arrays and objects, not brackets inside strings or after escaped quotes', () => {
    assert.equal(exceedsJsonDepth('[[[]]]', 3), false);
    assert.equal(exceedsJsonDepth('[[[[]]]]', 3), true);
    assert.equal(exceedsJsonDepth('{"a":{"b":[1]}}', 3), false);
    assert.equal(exceedsJsonDepth('{"a":{"b":[[1]]}}', 3), true);
    assert.equal(exceedsJsonDepth('["[[[[[[", "\\"[[[[[["]', 1), false);
    assert.equal(exceedsJsonDepth('["\\\\", [[1]]]', 2), true);
  });

  it('text may hold any Unicode but NUL and lone surrogates', () => {
    assert.equal(textProblem('plain, ünïcode, 😀'), undefined);
    assert.match(textProblem('a\u0000b')!, /NUL/);
    assert.match(textProblem('\ud800')!, /surrogate/);
    assert.match(textProblem('x\udc00')!, /surrogate/);
    assert.equal(textProblem('\ud83d\ude00'), undefined);
  });

  it('problems are named by JSON Pointer, keys escaped, prototype keys included', () => {
    const value = JSON.parse('{"data":{"a/b":["ok","\\u0000"],"m~n":{"__proto__":1},"constructor":2,"k\\u0000":3}}');
    assert.deepEqual(treeProblems(value, 'body'), [
      'body/data/a~1b/1: must not contain the NUL character (U+0000)',
      'body/data/m~0n/__proto__: unknown or read-only field',
      'body/data/constructor: unknown or read-only field',
      'body/data/k\u0000: the key must not contain the NUL character (U+0000)',
    ]);
  });

  it('parseJsonBody: empty is no body; malformed, too deep and rule-breaking bodies are typed 400s', () => {
    assert.equal(parseJsonBody('  '), undefined);
    assert.deepEqual(parseJsonBody('{"data":{"a":[1,"x"]}}'), { data: { a: [1, 'x'] } });
    assert.throws(() => parseJsonBody('{"data":'), { code: 'Api:Request:MALFORMED_JSON' });
    assert.throws(() => parseJsonBody('['.repeat(65) + ']'.repeat(65)), { code: 'Api:Request:TOO_DEEP' });
    assert.doesNotThrow(() => parseJsonBody('['.repeat(64) + ']'.repeat(64)));
    assert.throws(() => parseJsonBody('{"data":{"name":"\\ud800"}}'), { code: 'Api:Request:INVALID', status: 400 });
  });
});
