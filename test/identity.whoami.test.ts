import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, userCaller } from './helpers/callers.ts';

describe('GET /auth/whoami', () => {
  let t: TestApp;
  let otherOrgId: string;
  before(async () => {
    t = await startTestApp();
    otherOrgId = await createOrganization(t, 'Acme');
  });
  after(() => t.close());

  it('reports a user key as a MEMBERSHIP principal with every Principal field', async () => {
    const res = await t.call('GET', '/auth/whoami');
    assert.equal(res.status, 200);
    const p = res.body.data;
    assert.equal(p.principalType, 'MEMBERSHIP');
    assert.equal(p.globalRole, 'SUPER_ADMIN');
    assert.equal(p.role, 'OWNER');
    assert.equal(p.organizationName, 'Default');
    assert.equal(p.email, 'admin@localhost');
    for (const field of ['email', 'globalRole', 'identityId', 'membershipId', 'organizationId', 'organizationName', 'principalType', 'role', 'userId']) {
      assert.equal(typeof p[field], 'string', field);
    }
    assert.equal(p.isSuperAdmin, undefined, 'internal fields are not serialized');
  });

  it('reports a service-account key as a SERVICE_ACCOUNT principal of its own organization and role', async () => {
    const sa = await serviceAccountCaller(t, 'VIEWER');
    const res = await t.call('GET', '/auth/whoami', { token: sa.token });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.principalType, 'SERVICE_ACCOUNT');
    assert.equal(res.body.data.role, 'VIEWER');
    assert.equal(res.body.data.userId, sa.serviceAccountId);
    assert.equal(res.body.data.identityId, sa.keyId);
    assert.equal(res.body.data.organizationName, 'Default');
  });

  it('a user key acts in the X-Organization-Id organization when the user is a member there', async () => {
    const user = await userCaller(t, 'dev@example.com', 'MEMBER');
    const invite = await t.call('POST', '/memberships', { headers: inOrg(otherOrgId), body: { data: { email: 'dev@example.com', role: 'VIEWER' } } });
    assert.equal(invite.status, 201);
    const home = await t.call('GET', '/auth/whoami', { token: user.token });
    assert.equal(home.body.data.organizationName, 'Default');
    assert.equal(home.body.data.role, 'MEMBER');
    const there = await t.call('GET', '/auth/whoami', { token: user.token, headers: inOrg(otherOrgId) });
    assert.equal(there.status, 200);
    assert.equal(there.body.data.organizationId, otherOrgId);
    assert.equal(there.body.data.organizationName, 'Acme');
    assert.equal(there.body.data.role, 'VIEWER');
    assert.equal(there.body.data.membershipId, invite.body.data.id);
  });

  it('a user key naming an organization the user is not a member of is 403', async () => {
    const user = await userCaller(t, 'outsider@example.com', 'OWNER');
    const res = await t.call('GET', '/auth/whoami', { token: user.token, headers: inOrg(otherOrgId) });
    assertError(res, 403);
    const missing = await t.call('GET', '/auth/whoami', { token: user.token, headers: inOrg('no-such-org') });
    assertError(missing, 403);
  });

  it('the super-admin acts as OWNER in any organization it names', async () => {
    const res = await t.call('GET', '/auth/whoami', { headers: inOrg(otherOrgId) });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.organizationId, otherOrgId);
    assert.equal(res.body.data.role, 'OWNER');
  });

  it('a service-account key ignores X-Organization-Id and stays in its own organization', async () => {
    const sa = await serviceAccountCaller(t, 'ADMIN');
    const res = await t.call('GET', '/auth/whoami', { token: sa.token, headers: inOrg(otherOrgId) });
    assert.equal(res.status, 200);
    assert.notEqual(res.body.data.organizationId, otherOrgId);
    assert.equal(res.body.data.organizationName, 'Default');
  });

  it('no credential is 401 Auth:Credential:MISSING', async () => {
    assertError(await t.call('GET', '/auth/whoami', { token: null }), 401, 'Auth:Credential:MISSING');
  });

  it('an unknown, malformed or non-Bearer credential is 401', async () => {
    assertError(await t.call('GET', '/auth/whoami', { token: 'plk_not_a_real_token' }), 401, 'Auth:Credential:INVALID');
    assertError(await t.call('GET', '/auth/whoami', { token: null, headers: { authorization: 'Basic YWRtaW46YWRtaW4=' } }), 401, 'Auth:Credential:INVALID');
    assertError(await t.call('GET', '/auth/whoami', { token: null, headers: { authorization: 'Bearer' } }), 401);
    assertError(await t.call('GET', '/auth/whoami', { token: 'plk_' + 'x'.repeat(600) }), 401, 'Auth:Credential:INVALID');
  });

  it('the token is matched whole: a prefix or a variant of a valid token is 401', async () => {
    assertError(await t.call('GET', '/auth/whoami', { token: t.adminToken.slice(0, -1) }), 401);
    assertError(await t.call('GET', '/auth/whoami', { token: t.adminToken + 'x' }), 401);
  });
});
