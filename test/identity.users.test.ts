import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, userCaller, type UserCaller } from './helpers/callers.ts';

describe('users', () => {
  let t: TestApp;
  let member: UserCaller;
  let admin: UserCaller;
  let foreignUserId: string;
  before(async () => {
    t = await startTestApp();
    member = await userCaller(t, 'member@example.com', 'MEMBER');
    admin = await userCaller(t, 'admin@example.com', 'ADMIN');
    const orgId = await createOrganization(t, 'Foreign');
    const res = await t.call('POST', '/memberships', { headers: inOrg(orgId), body: { data: { email: 'foreigner@example.com', role: 'MEMBER' } } });
    foreignUserId = res.body.data.userId;
  });
  after(() => t.close());

  it('GET /users/me is the calling user', async () => {
    const res = await t.call('GET', '/users/me', { token: member.token });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.id, member.userId);
    assert.equal(res.body.data.email, 'member@example.com');
    assert.equal(res.body.data.globalRole, 'USER');
    assert.match(res.body.data.createdAt, /Z$/);
    const root = await t.call('GET', '/users/me');
    assert.equal(root.body.data.globalRole, 'SUPER_ADMIN');
  });

  it('GET /users/me for a service account is 403 (it is not a user)', async () => {
    const sa = await serviceAccountCaller(t, 'OWNER');
    assertError(await t.call('GET', '/users/me', { token: sa.token }), 403, 'Auth:Principal:NOT_A_USER');
  });

  it('GET /users/me without a credential is 401', async () => {
    assertError(await t.call('GET', '/users/me', { token: null }), 401);
  });

  it('a user reads their own identities', async () => {
    const res = await t.call('GET', `/users/${member.userId}/identities`, { token: member.token });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, { hasPassword: false, identityProviders: [] });
  });

  it("an ADMIN reads a member's identities; a MEMBER may not (403)", async () => {
    assert.equal((await t.call('GET', `/users/${member.userId}/identities`, { token: admin.token })).status, 200);
    assertError(await t.call('GET', `/users/${admin.userId}/identities`, { token: member.token }), 403);
  });

  it('the identities of a user outside the organization are 404, even for an ADMIN', async () => {
    assertError(await t.call('GET', `/users/${foreignUserId}/identities`, { token: admin.token }), 404, 'Api:User:NOT_FOUND');
    assertError(await t.call('GET', `/users/${foreignUserId}/identities`, { token: member.token }), 404);
    assertError(await t.call('GET', '/users/no-such-user/identities', { token: admin.token }), 404);
  });

  it('GET /users/{id}/identities without a credential is 401', async () => {
    assertError(await t.call('GET', `/users/${member.userId}/identities`, { token: null }), 401);
  });
});
