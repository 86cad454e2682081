import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';

const replicas = { id: 'replicas', label: 'Replicas', type: 'number', integer: true, min: 1 };

describe('default-value definitions', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp()));
  after(() => t.close());

  const create = (givenId: string, schema: unknown = replicas, token?: string) =>
    t.call('POST', '/default-value-definitions', { token, body: { data: { givenId, name: `Def ${givenId}`, schema } } });
  const setValue = (defaultValueDefinitionId: string, parentId: string, value: unknown) =>
    t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId, parentId, value } } });
  const orgId = async () => (await t.call('GET', '/auth/whoami')).body.data.organizationId;

  it('creates a USER definition and reads it back', async () => {
    const res = await create('replicas', replicas);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.data.createdByType, 'USER');
    assert.deepEqual(res.body.data.schema, replicas);
    assert.deepEqual((await t.call('GET', `/default-value-definitions/${res.body.data.id}`)).body.data, res.body.data);
    assert.equal((await create('replicas')).status, 409);
  });

  it('stores every variant exactly as sent, nothing added', async () => {
    const tags = { id: 'tags', label: 'Tags', type: 'key_value', value_patterns: [{ pattern: '^.{1,256}$', message: 'too long' }] };
    const res = await create('tags', tags);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.schema, tags);
  });

  it('createdByType is read-only', async () => {
    const res = await t.call('POST', '/default-value-definitions', {
      body: { data: { givenId: 'sys', name: 'S', schema: replicas, createdByType: 'SYSTEM' } },
    });
    assert.equal(res.status, 400);
  });

  it('every organization has the SYSTEM aws_region definition, which users cannot change or delete', async () => {
    const other = await createOrganization(t, 'Seeded');
    for (const headers of [undefined, inOrg(other)]) {
      const list = await t.call('GET', '/default-value-definitions?limit=200', { headers });
      const region = list.body.data.find((d: { givenId: string }) => d.givenId === 'aws_region');
      assert.equal(region?.createdByType, 'SYSTEM');
      const del = await t.call('DELETE', `/default-value-definitions/${region.id}`, { headers });
      assert.equal(del.status, 403);
      assert.equal(del.body.code, 'Api:DefaultValueDefinition:SYSTEM_MANAGED');
      assert.equal((await t.call('PATCH', `/default-value-definitions/${region.id}`, { headers, body: { data: { name: 'x' } } })).status, 403);
    }
  });

  it('a malformed schema is 400; a schema that contradicts itself is 422 with every problem and its path', async () => {
    const unknownType = await create('bad1', { id: 'x', label: 'X', type: 'colour' });
    assert.equal(unknownType.status, 400);
    const res = await create('bad2', {
      id: 'x',
      label: 'X',
      type: 'object',
      properties: [
        { id: 'name', label: 'Name', type: 'string', patterns: [{ pattern: '^(a)\\1$', message: 'a' }] },
        { id: 'size', label: 'Size', type: 'number', min: 10, max: 1, default: { $defaultValue: 'nowhere' } },
      ],
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'Api:DefaultValueDefinition:INVALID_SCHEMA');
    assert.deepEqual(res.body.details[0].items, [
      '/data/schema/properties/0/patterns/0/pattern: is not a valid regular expression (invalid escape sequence: `\\1`); patterns are RE2 syntax, without backreferences or lookaround',
      '/data/schema/properties/1/min: must not be greater than max',
      '/data/schema: $defaultValue nowhere names no definition of this organization',
    ]);
  });

  it('a default may reference another definition', async () => {
    const res = await create('region-copy', { id: 'r', label: 'Region', type: 'string', default: { $defaultValue: 'aws_region' } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const target = (await create('target', { id: 't', label: 'T', type: 'string' })).body.data;
    const referrer = await create('referrer', {
      id: 'o',
      label: 'O',
      type: 'object',
      properties: [{ id: 'n', label: 'N', type: 'string', default: { $defaultValue: 'target' } }],
    });
    assert.equal(referrer.status, 201, JSON.stringify(referrer.body));
    const blocked = await t.call('DELETE', `/default-value-definitions/${target.id}?cascade=true`);
    assert.equal(blocked.status, 409);
    assert.deepEqual(blocked.body.details[0].items, ['definitions whose default refers to it: referrer']);
    const self = await create('selfish', { id: 's', label: 'S', type: 'string', default: { $defaultValue: 'selfish' } });
    assert.equal(self.status, 422);
  });

  it('PATCH changes only the supplied fields', async () => {
    const def = (
      await t.call('POST', '/default-value-definitions', {
        body: { data: { givenId: 'patchme', name: 'Before', description: 'kept', schema: replicas } },
      })
    ).body.data;
    const res = await t.call('PATCH', `/default-value-definitions/${def.id}`, { body: { data: { name: 'After' } } });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.name, 'After');
    assert.equal(res.body.data.description, 'kept');
    assert.deepEqual(res.body.data.schema, replicas);
    assert.ok(res.body.data.updatedAt >= def.updatedAt);
  });

  it('a schema change that stored values would break is 422 naming them; a compatible one passes', async () => {
    const def = (await create('sizes')).body.data;
    const org = await orgId();
    const project = (await t.call('POST', '/projects', { body: { data: { givenId: 'sized', name: 'S' } } })).body.data;
    const small = (await setValue(def.id, org, 2)).body.data;
    const big = (await setValue(def.id, project.id, 40)).body.data;

    const breaking = await t.call('PATCH', `/default-value-definitions/${def.id}`, { body: { data: { schema: { ...replicas, max: 10 } } } });
    assert.equal(breaking.status, 422);
    assert.equal(breaking.body.code, 'Api:DefaultValueDefinition:SCHEMA_REJECTS_VALUES');
    assert.deepEqual(breaking.body.details[0].items, [`value ${big.id} (project ${project.id}): must be at most 10`]);
    assert.deepEqual((await t.call('GET', `/default-value-definitions/${def.id}`)).body.data.schema, replicas, 'nothing changed');

    const fine = await t.call('PATCH', `/default-value-definitions/${def.id}`, { body: { data: { schema: { ...replicas, max: 50 } } } });
    assert.equal(fine.status, 200, JSON.stringify(fine.body));
    assert.ok(small.id);
  });

  it('DELETE is 409 while values exist, and ?cascade=true deletes them too', async () => {
    const def = (await create('doomed')).body.data;
    const value = (await setValue(def.id, await orgId(), 3)).body.data;
    const refused = await t.call('DELETE', `/default-value-definitions/${def.id}`);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'Api:DefaultValueDefinition:IN_USE');
    assert.equal((await t.call('DELETE', `/default-value-definitions/${def.id}?cascade=true`)).status, 204);
    assert.equal((await t.call('GET', `/default-value-definitions/${def.id}`)).status, 404);
    assert.equal((await t.call('GET', `/default-values/${value.id}`)).status, 404);

    const empty = (await create('empty')).body.data;
    assert.equal((await t.call('DELETE', `/default-value-definitions/${empty.id}`)).status, 204);
  });

  it('VIEWER reads, MEMBER writes; another organization sees none of it', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    const member = await serviceAccountCaller(t, 'MEMBER');
    assert.equal((await create('by-viewer', replicas, viewer.token)).status, 403);
    const mine = await create('by-member', replicas, member.token);
    assert.equal(mine.status, 201);
    assert.equal((await t.call('GET', '/default-value-definitions', { token: viewer.token })).status, 200);
    const other = await createOrganization(t, 'Nosy');
    const res = await t.call('GET', `/default-value-definitions/${mine.body.data.id}`, { headers: inOrg(other) });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'Api:DefaultValueDefinition:NOT_FOUND');
  });
});
