import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';

describe('projects', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp()));
  after(() => t.close());

  const create = (givenId: string, extra: Record<string, unknown> = {}, token?: string) =>
    t.call('POST', '/projects', { token, body: { data: { givenId, name: `Project ${givenId}`, ...extra } } });

  it('creates, reads, patches and deletes a project', async () => {
    const created = await create('web', { description: 'the web app' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const p = created.body.data;
    assert.equal(p.givenId, 'web');
    assert.equal(p.description, 'the web app');
    assert.match(p.createdAt, /Z$/);

    const read = await t.call('GET', `/projects/${p.id}`);
    assert.deepEqual(read.body.data, p);

    const patched = await t.call('PATCH', `/projects/${p.id}`, { body: { data: { name: 'Web' } } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.data.name, 'Web');
    assert.equal(patched.body.data.description, 'the web app', 'fields not supplied stay as they were');

    assert.equal((await t.call('DELETE', `/projects/${p.id}`)).status, 204);
    const gone = await t.call('GET', `/projects/${p.id}`);
    assert.equal(gone.status, 404);
    assert.equal(gone.body.code, 'Api:Project:NOT_FOUND');
  });

  it('a duplicate givenId in the same organization is 409, in another organization it is fine', async () => {
    assert.equal((await create('dup')).status, 201);
    const again = await create('dup');
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'Api:Project:ALREADY_EXISTS');
    const orgId = await createOrganization(t, 'Dup org');
    const elsewhere = await t.call('POST', '/projects', { headers: inOrg(orgId), body: { data: { givenId: 'dup', name: 'x' } } });
    assert.equal(elsewhere.status, 201);
  });

  it('givenId is validated and fixed after creation', async () => {
    const bad = await create('-bad');
    assert.equal(bad.status, 400);
    const p = (await create('fixed')).body.data;
    const patch = await t.call('PATCH', `/projects/${p.id}`, { body: { data: { givenId: 'other' } } });
    assert.equal(patch.status, 400);
  });

  it("another organization's project is 404 for read, patch and delete", async () => {
    const orgId = await createOrganization(t, 'Hidden org');
    const hidden = (await t.call('POST', '/projects', { headers: inOrg(orgId), body: { data: { givenId: 'hidden', name: 'h' } } })).body.data;
    const outsider = await serviceAccountCaller(t, 'OWNER');
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { data: { name: 'x' } }],
      ['DELETE', undefined],
    ] as const) {
      const res = await t.call(method, `/projects/${hidden.id}`, { token: outsider.token, body });
      assert.equal(res.status, 404, `${method} ${JSON.stringify(res.body)}`);
    }
    const list = await t.call('GET', '/projects?limit=200', { token: outsider.token });
    assert.ok(!list.body.data.some((x: { id: string }) => x.id === hidden.id));
  });

  it('VIEWER reads but cannot write; MEMBER writes', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    const member = await serviceAccountCaller(t, 'MEMBER');
    assert.equal((await t.call('GET', '/projects', { token: viewer.token })).status, 200);
    const denied = await create('by-viewer', {}, viewer.token);
    assert.equal(denied.status, 403);
    const made = await create('by-member', {}, member.token);
    assert.equal(made.status, 201);
    assert.equal((await t.call('PATCH', `/projects/${made.body.data.id}`, { token: viewer.token, body: { data: { name: 'x' } } })).status, 403);
    assert.equal((await t.call('DELETE', `/projects/${made.body.data.id}`, { token: viewer.token })).status, 403);
    assert.equal((await t.call('DELETE', `/projects/${made.body.data.id}`, { token: member.token })).status, 204);
  });

  it('deleting a project with environments is 409 naming them', async () => {
    const p = (await create('has-envs')).body.data;
    const env = await t.call('POST', '/environments', { body: { data: { projectId: p.id, givenId: 'staging', name: 'Staging' } } });
    assert.equal(env.status, 201, JSON.stringify(env.body));
    const res = await t.call('DELETE', `/projects/${p.id}`);
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'Api:Project:IN_USE');
    assert.deepEqual(res.body.details[0].items, ['environments: staging']);
    assert.equal((await t.call('DELETE', `/environments/${env.body.data.id}`)).status, 204);
    assert.equal((await t.call('DELETE', `/projects/${p.id}`)).status, 204);
  });
});
