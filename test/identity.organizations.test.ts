import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, userCaller, type UserCaller } from './helpers/callers.ts';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

describe('organizations', () => {
  let t: TestApp;
  let member: UserCaller;
  let foreignOrgId: string;
  before(async () => {
    t = await startTestApp();
    member = await userCaller(t, 'member@example.com', 'MEMBER');
    foreignOrgId = await createOrganization(t, 'Foreign');
  });
  after(() => t.close());

  it('POST /organizations creates an organization (201) whose OWNER is the calling user', async () => {
    const res = await t.call('POST', '/organizations', { token: member.token, body: { data: { name: 'Mine', billingEmail: 'pay@example.com' } } });
    assert.equal(res.status, 201);
    const org = res.body.data;
    assert.equal(org.name, 'Mine');
    assert.equal(org.billingEmail, 'pay@example.com');
    assert.equal(typeof org.id, 'string');
    assert.match(org.createdAt, ISO_UTC);
    assert.match(org.updatedAt, ISO_UTC);
    const me = await t.call('GET', '/auth/whoami', { token: member.token, headers: inOrg(org.id) });
    assert.equal(me.body.data.role, 'OWNER');
    assert.equal(me.body.data.organizationId, org.id);
  });

  it('a service account may not create an organization (403)', async () => {
    const sa = await serviceAccountCaller(t, 'OWNER');
    assertError(await t.call('POST', '/organizations', { token: sa.token, body: { data: { name: 'X', billingEmail: 'x@example.com' } } }), 403);
  });

  it('GET /organizations lists only the organizations the caller belongs to', async () => {
    const res = await t.call('GET', '/organizations', { token: member.token });
    assert.equal(res.status, 200);
    assert.equal(res.body.meta.limit, 50);
    const names = res.body.data.map((o: { name: string }) => o.name).sort();
    assert.deepEqual(names, ['Default', 'Mine']);
    assert.ok(!res.body.data.some((o: { id: string }) => o.id === foreignOrgId));
  });

  it('GET /organizations for a service account is its own organization', async () => {
    const sa = await serviceAccountCaller(t, 'VIEWER');
    const res = await t.call('GET', '/organizations', { token: sa.token });
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.data.map((o: { name: string }) => o.name),
      ['Default'],
    );
  });

  it('GET /organizations/{id} reads an organization the caller belongs to', async () => {
    const who = await t.call('GET', '/auth/whoami', { token: member.token });
    const res = await t.call('GET', `/organizations/${who.body.data.organizationId}`, { token: member.token });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.name, 'Default');
  });

  it("another organization's id is 404, for GET and PATCH alike", async () => {
    assertError(await t.call('GET', `/organizations/${foreignOrgId}`, { token: member.token }), 404, 'Api:Organization:NOT_FOUND');
    assertError(await t.call('PATCH', `/organizations/${foreignOrgId}`, { token: member.token, body: { data: { name: 'Taken' } } }), 404);
    assertError(await t.call('GET', '/organizations/does-not-exist'), 404);
  });

  it('PATCH /organizations/{id} changes only the supplied fields (OWNER)', async () => {
    const before = await t.call('GET', `/organizations/${foreignOrgId}`);
    const res = await t.call('PATCH', `/organizations/${foreignOrgId}`, { body: { data: { billingEmail: 'new@example.com' } } });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.billingEmail, 'new@example.com');
    assert.equal(res.body.data.name, 'Foreign');
    assert.equal(res.body.data.createdAt, before.body.data.createdAt);
    assert.ok(res.body.data.updatedAt >= before.body.data.updatedAt);
    const again = await t.call('GET', `/organizations/${foreignOrgId}`);
    assert.deepEqual(again.body.data, res.body.data);
  });

  it('PATCH /organizations/{id} by a MEMBER, or an ADMIN service account, is 403', async () => {
    const who = await t.call('GET', '/auth/whoami', { token: member.token });
    const orgId = who.body.data.organizationId;
    assertError(await t.call('PATCH', `/organizations/${orgId}`, { token: member.token, body: { data: { name: 'Renamed' } } }), 403);
    const admin = await serviceAccountCaller(t, 'ADMIN');
    assertError(await t.call('PATCH', `/organizations/${orgId}`, { token: admin.token, body: { data: { name: 'Renamed' } } }), 403);
  });

  it('without a credential every organization route is 401', async () => {
    assertError(await t.call('GET', '/organizations', { token: null }), 401);
    assertError(await t.call('GET', `/organizations/${foreignOrgId}`, { token: null }), 401);
    assertError(await t.call('POST', '/organizations', { token: null, body: { data: { name: 'X', billingEmail: 'x@example.com' } } }), 401);
    assertError(await t.call('PATCH', `/organizations/${foreignOrgId}`, { token: 'plk_wrong', body: { data: { name: 'X' } } }), 401);
  });

  it('bad organization bodies are 400 with the offending field listed', async () => {
    const bad = [
      { data: { name: 'X' } },
      { data: { name: 5, billingEmail: 'x@example.com' } },
      { data: { name: '', billingEmail: 'x@example.com' } },
      { data: { name: 'X', billingEmail: 'not-an-email' } },
      { data: { name: 'X', billingEmail: 'x@example.com', id: 'chosen' } },
      { data: { name: 'X', billingEmail: 'x@example.com', createdAt: '2020-01-01T00:00:00Z' } },
      { name: 'X', billingEmail: 'x@example.com' },
      { data: 'X' },
      { data: null },
      [],
    ];
    for (const body of bad) {
      const res = await t.call('POST', '/organizations', { body });
      assertError(res, 400, 'Api:Request:INVALID');
      assert.ok(res.body.details?.[0]?.items?.length, `details for ${JSON.stringify(body)}`);
    }
    assertError(await t.call('PATCH', `/organizations/${foreignOrgId}`, { body: { data: { name: 'X', extra: true } } }), 400);
    assertError(await t.call('PATCH', `/organizations/${foreignOrgId}`, { body: { data: { billingEmail: null } } }), 400);
  });
});
