import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError } from './helpers/callers.ts';

/** `section` nested `depth` levels, each holding the next: 655 bytes at depth 10. */
function nestedSections(depth: number): Record<string, unknown> {
  let node: Record<string, unknown> = { id: 'leaf', label: 'L', type: 'string' };
  for (let i = 0; i < depth; i++) node = { id: `s${i}`, label: 'S', type: 'section', properties: [node] };
  return node;
}

/** Patterns that backtrack exponentially on a run of `a` that ends in `!`, in a backtracking engine. */
const SLOW_PATTERNS = ['^(a|a)*$', '^(a|aa)*$', '^(aa|a)*$', '^(a|a|a)*$', '^(a|ab|a)*$', '(a+)+$'].map((pattern) => ({ pattern, message: 'no' }));
const HOSTILE_STRINGS = Array.from({ length: 16 }, () => 'a'.repeat(42) + '!');

describe('hostile default-value schemas and values answer in milliseconds', () => {
  let t: TestApp;
  let orgId: string;
  before(async () => {
    t = await startTestApp();
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
  });
  after(() => t.close());

  const create = (givenId: string, schema: unknown) =>
    t.call('POST', '/default-value-definitions', { body: { data: { givenId, name: givenId, schema } } });

  it('a schema with section nested 10 deep is refused quickly (validation is linear in the input)', async () => {
    assert.ok(JSON.stringify(nestedSections(10)).length < 700);
    // The first call of a route's validator pays V8's lazy compilation; the accepted depth goes first.
    assert.equal((await create('deep8', nestedSections(8))).status, 201);
    // At ×5 per level (the anyOf without a discriminator), depth 14 would take hours; linear, it takes a millisecond.
    for (const depth of [10, 12, 14]) {
      const started = performance.now();
      const res = await create(`deep${depth}`, nestedSections(depth));
      const ms = performance.now() - started;
      assertError(res, 422, 'Api:DefaultValueDefinition:INVALID_SCHEMA');
      assert.ok(res.body.details[0].items.some((p: string) => p.includes('nests deeper than 8')), JSON.stringify(res.body));
      assert.ok(ms < 1000, `depth ${depth}: ${ms} ms`);
    }
  });

  it('a pattern RE2 cannot compile is refused when the schema is written, naming it and why', async () => {
    const schema = { id: 'name', label: 'Name', type: 'string', patterns: [{ pattern: '^(?!-)[a-z-]+$', message: 'no leading dash' }] };
    const res = await create('lookahead', schema);
    assertError(res, 422, 'Api:DefaultValueDefinition:INVALID_SCHEMA');
    assert.deepEqual(res.body.details[0].items, [
      '/data/schema/patterns/0/pattern: is not a valid regular expression (invalid or unsupported Perl syntax: `(?!`); patterns are RE2 syntax, without backreferences or lookaround',
    ]);
  });

  it('slow patterns of a backtracking engine against many strings answer in milliseconds', async () => {
    const schema = { id: 'names', label: 'Names', type: 'string_array', patterns: SLOW_PATTERNS };
    let started = performance.now();
    const withDefault = await create('slow-default', { ...schema, default: HOSTILE_STRINGS });
    assertError(withDefault, 422, 'Api:DefaultValueDefinition:INVALID_SCHEMA');
    assert.equal(withDefault.body.details[0].items.length, HOSTILE_STRINGS.length * SLOW_PATTERNS.length);
    assert.ok(performance.now() - started < 1000, `${performance.now() - started} ms`);

    const definition = await create('slow', schema);
    assert.equal(definition.status, 201, JSON.stringify(definition.body));
    started = performance.now();
    const value = await t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: definition.body.data.id, parentId: orgId, value: HOSTILE_STRINGS } } });
    assertError(value, 422, 'Api:DefaultValue:INVALID_VALUE');
    assert.ok(performance.now() - started < 1000, `${performance.now() - started} ms`);
  });

  it('PATCH of a definition re-checks every stored value against slow patterns in milliseconds', async () => {
    const plain = { id: 'names', label: 'Names', type: 'string_array' };
    const definition = (await create('restricted', plain)).body.data;
    for (let i = 0; i < 6; i++) {
      const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: `p${i}`, name: `P${i}` } } })).body.data.id;
      const res = await t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: definition.id, parentId: projectId, value: HOSTILE_STRINGS } } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const started = performance.now();
    const res = await t.call('PATCH', `/default-value-definitions/${definition.id}`, { body: { data: { schema: { ...plain, patterns: SLOW_PATTERNS } } } });
    assertError(res, 422, 'Api:DefaultValueDefinition:SCHEMA_REJECTS_VALUES');
    assert.ok(performance.now() - started < 1000, `${performance.now() - started} ms`);
    assert.deepEqual((await t.call('GET', `/default-value-definitions/${definition.id}`)).body.data.schema, plain);
  });
});
