import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';

describe('module definitions', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const create = (data: Record<string, unknown>, options: { token?: string; headers?: Record<string, string> } = {}) =>
    t.call('POST', '/module-definitions', { ...options, body: { data } });

  it('creates a DRAFT definition, reads, renames and deletes it', async () => {
    const created = await create({ type: 'aws/ecs-service', name: 'ECS service', description: 'A container service' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const definition = created.body.data;
    assert.equal(definition.status, 'DRAFT');
    assert.equal(definition.global, false);
    assert.equal(definition.latestVersion, undefined);
    assert.equal(typeof definition.organizationId, 'string');
    assert.deepEqual((await t.call('GET', `/module-definitions/${definition.id}`)).body.data, definition);
    const patched = await t.call('PATCH', `/module-definitions/${definition.id}`, { body: { data: { name: 'Service' } } });
    assert.equal(patched.body.data.name, 'Service');
    assert.equal(patched.body.data.description, 'A container service');
    assertError(await t.call('PATCH', `/module-definitions/${definition.id}`, { body: { data: { type: 'other' } } }), 400);
    assert.equal((await t.call('DELETE', `/module-definitions/${definition.id}`)).status, 204);
    assertError(await t.call('GET', `/module-definitions/${definition.id}`), 404, 'Api:ModuleDefinition:NOT_FOUND');
  });

  it('refuses a second definition of one type in an organization (409)', async () => {
    assert.equal((await create({ type: 'aws/vpc', name: 'VPC' })).status, 201);
    assertError(await create({ type: 'aws/vpc', name: 'Another' }), 409, 'Api:ModuleDefinition:ALREADY_EXISTS');
  });

  it('lets only a super-administrator publish a global definition, which every organization reads and none changes', async () => {
    const owner = await serviceAccountCaller(t, 'OWNER');
    assertError(await create({ type: 'shared/bucket', name: 'Bucket', global: true }, { token: owner.token }), 403, 'Api:ModuleDefinition:GLOBAL_READ_ONLY');
    const global = await create({ type: 'shared/bucket', name: 'Bucket', global: true });
    assert.equal(global.status, 201, JSON.stringify(global.body));
    assert.equal(global.body.data.global, true);
    assert.equal(global.body.data.organizationId, undefined);
    const other = await createOrganization(t, 'Reader org');
    const read = await t.call('GET', `/module-definitions/${global.body.data.id}`, { headers: inOrg(other) });
    assert.equal(read.status, 200);
    const otherOwner = await serviceAccountCaller(t, 'OWNER', other);
    assertError(
      await t.call('PATCH', `/module-definitions/${global.body.data.id}`, { token: otherOwner.token, body: { data: { name: 'Mine' } } }),
      403,
      'Api:ModuleDefinition:GLOBAL_READ_ONLY',
    );
    assertError(
      await t.call('DELETE', `/module-definitions/${global.body.data.id}`, { token: otherOwner.token }),
      403,
      'Api:ModuleDefinition:GLOBAL_READ_ONLY',
    );
    const listed = await t.call('GET', '/module-definitions?type=shared%2Fbucket', { token: otherOwner.token });
    assert.deepEqual(
      listed.body.data.map((d: { id: string }) => d.id),
      [global.body.data.id],
    );
  });

  it("lists the organization's own definitions and the global ones, never another organization's", async () => {
    const other = await createOrganization(t, 'Private org');
    const mine = await create({ type: 'private/thing', name: 'Private' }, { headers: inOrg(other) });
    assert.equal(mine.status, 201);
    const listed = await t.call('GET', '/module-definitions?limit=200');
    assert.ok(!listed.body.data.some((d: { id: string }) => d.id === mine.body.data.id));
    assertError(await t.call('GET', `/module-definitions/${mine.body.data.id}`), 404, 'Api:ModuleDefinition:NOT_FOUND');
  });

  it('filters by status DRAFT or ACTIVE, and refuses another status', async () => {
    const drafts = await t.call('GET', '/module-definitions?status=DRAFT&limit=200');
    assert.equal(drafts.status, 200);
    assert.ok(drafts.body.data.length > 0);
    assert.ok(drafts.body.data.every((d: { status: string }) => d.status === 'DRAFT'));
    assert.equal((await t.call('GET', '/module-definitions?status=ACTIVE')).status, 200);
    assertError(await t.call('GET', '/module-definitions?status=RETIRED'), 400);
    const document = (await t.call('GET', '/openapi.json')).body;
    const status = document.paths['/module-definitions'].get.parameters.find((p: { name: string }) => p.name === 'status');
    assert.deepEqual(status.schema.enum, ['DRAFT', 'ACTIVE']);
  });

  it('lets a VIEWER read and not write', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assert.equal((await t.call('GET', '/module-definitions', { token: viewer.token })).status, 200);
    assertError(await create({ type: 'viewer/x', name: 'X' }, { token: viewer.token }), 403, 'Auth:Permission:DENIED');
  });
});
