import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureAdmin } from '../src/credentials/bootstrap.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, userCaller, type UserCaller } from './helpers/callers.ts';

/** Key ownership follows the role matrix: nobody revokes a key that would cut more access than they hold. */
describe('who may revoke an API key', () => {
  let t: TestApp;
  let admin: UserCaller;
  let owner: UserCaller;
  before(async () => {
    t = await startTestApp();
    admin = await userCaller(t, 'admin@example.com', 'ADMIN');
    owner = await userCaller(t, 'owner@example.com', 'OWNER');
  });
  after(() => t.close());

  const keyIdOf = async (token: string, headers?: Record<string, string>) => (await t.call('GET', '/auth/whoami', { token, headers })).body.data.identityId;

  it("an ADMIN may not revoke an OWNER user's key (403), and the key keeps working", async () => {
    const res = await t.call('DELETE', `/api-keys/${await keyIdOf(owner.token)}`, { token: admin.token });
    assertError(res, 403, 'Auth:Permission:DENIED');
    assert.equal((await t.call('GET', '/auth/whoami', { token: owner.token })).status, 200);
  });

  it("an ADMIN may not revoke an OWNER service account's key; an OWNER may", async () => {
    const sa = await serviceAccountCaller(t, 'OWNER');
    assertError(await t.call('DELETE', `/api-keys/${sa.keyId}`, { token: admin.token }), 403, 'Auth:Permission:DENIED');
    assert.equal((await t.call('GET', '/auth/whoami', { token: sa.token })).status, 200);
    const lesser = await serviceAccountCaller(t, 'MEMBER');
    assert.equal((await t.call('DELETE', `/api-keys/${lesser.keyId}`, { token: admin.token })).status, 204);
    assert.equal((await t.call('DELETE', `/api-keys/${sa.keyId}`, { token: owner.token })).status, 204);
    assertError(await t.call('GET', '/auth/whoami', { token: sa.token }), 401, 'Auth:Credential:REVOKED');
  });

  it("neither an ADMIN nor an OWNER may revoke the super-administrator's key", async () => {
    const bootstrapKeyId = await keyIdOf(t.adminToken);
    assertError(await t.call('DELETE', `/api-keys/${bootstrapKeyId}`, { token: admin.token }), 403, 'Auth:Permission:DENIED');
    assertError(await t.call('DELETE', `/api-keys/${bootstrapKeyId}`, { token: owner.token }), 403, 'Auth:Permission:DENIED');
    assert.equal((await t.call('GET', '/auth/whoami')).status, 200);
  });

  it("a user's key acts wherever the user is a member; one organization's ADMIN cannot cut the user's access to another", async () => {
    const orgC = await createOrganization(t, 'C');
    const user = await userCaller(t, 'roamer@example.com', 'MEMBER');
    assert.equal((await t.call('POST', '/memberships', { headers: inOrg(orgC), body: { data: { email: 'roamer@example.com', role: 'MEMBER' } } })).status, 201);
    const keyId = await keyIdOf(user.token);
    assertError(await t.call('DELETE', `/api-keys/${keyId}`, { token: admin.token }), 403, 'Auth:Permission:DENIED');
    assert.equal((await t.call('GET', '/auth/whoami', { token: user.token, headers: inOrg(orgC) })).status, 200);
    // What the ADMIN may do: end the user's access to the ADMIN's own organization, and only there.
    assert.equal((await t.call('DELETE', `/memberships/${user.membershipId}`, { token: admin.token })).status, 204);
    assertError(await t.call('GET', '/auth/whoami', { token: user.token }), 403, 'Auth:Organization:FORBIDDEN');
    assert.equal((await t.call('GET', '/auth/whoami', { token: user.token, headers: inOrg(orgC) })).status, 200);
  });

  it('a user revokes their own key from any organization they act in; a super-administrator revokes anyone’s', async () => {
    const orgC = await createOrganization(t, 'C2');
    const user = await userCaller(t, 'self@example.com', 'VIEWER');
    await t.call('POST', '/memberships', { headers: inOrg(orgC), body: { data: { email: 'self@example.com', role: 'VIEWER' } } });
    const spare = (await t.call('POST', '/api-keys', { token: user.token, body: { data: { name: 'spare' } } })).body.data;
    assert.equal((await t.call('DELETE', `/api-keys/${spare.id}`, { token: user.token, headers: inOrg(orgC) })).status, 204);
    assertError(await t.call('GET', '/auth/whoami', { token: spare.token }), 401, 'Auth:Credential:REVOKED');
    assert.equal((await t.call('DELETE', `/api-keys/${await keyIdOf(user.token)}`)).status, 204);
    assertError(await t.call('GET', '/auth/whoami', { token: user.token }), 401, 'Auth:Credential:REVOKED');
  });

  it('a revoked bootstrap key is restored at the next start', async () => {
    const keyId = await keyIdOf(t.adminToken);
    assert.equal((await t.call('DELETE', `/api-keys/${keyId}`)).status, 204);
    assertError(await t.call('GET', '/auth/whoami'), 401, 'Auth:Credential:REVOKED');
    await ensureAdmin(t.db, { adminToken: t.adminToken, adminEmail: 'admin@localhost' });
    const who = await t.call('GET', '/auth/whoami');
    assert.equal(who.status, 200, JSON.stringify(who.body));
    assert.equal(who.body.data.identityId, keyId);
    assert.equal(who.body.data.globalRole, 'SUPER_ADMIN');
  });
});
