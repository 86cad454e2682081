import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, userCaller, type ServiceAccountCaller } from './helpers/callers.ts';

describe('memberships', () => {
  let t: TestApp;
  let adminSa: ServiceAccountCaller;
  let viewerSa: ServiceAccountCaller;
  let foreignOrgId: string;
  let foreignMembershipId: string;
  before(async () => {
    t = await startTestApp();
    adminSa = await serviceAccountCaller(t, 'ADMIN');
    viewerSa = await serviceAccountCaller(t, 'VIEWER');
    foreignOrgId = await createOrganization(t, 'Foreign');
    const res = await t.call('POST', '/memberships', { headers: inOrg(foreignOrgId), body: { data: { email: 'foreigner@example.com', role: 'MEMBER' } } });
    foreignMembershipId = res.body.data.id;
  });
  after(() => t.close());

  const invite = (email: string, role: string, token?: string) => t.call('POST', '/memberships', { token, body: { data: { email, role } } });

  it('POST /memberships invites a user by email (201) and the membership reads back', async () => {
    const res = await invite('Alice@Example.com', 'MEMBER', adminSa.token);
    assert.equal(res.status, 201);
    const m = res.body.data;
    assert.equal(m.email, 'Alice@Example.com');
    assert.equal(m.invitedEmail, 'Alice@Example.com');
    assert.equal(m.role, 'MEMBER');
    assert.equal(typeof m.userId, 'string');
    assert.equal(typeof m.invitationId, 'string');
    const read = await t.call('GET', `/memberships/${m.id}`, { token: viewerSa.token });
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.data, m);
  });

  it('inviting an email that is already a member (in any letter case) is 409', async () => {
    await invite('bob@example.com', 'VIEWER');
    assertError(await invite('BOB@example.com', 'MEMBER'), 409, 'Api:Membership:ALREADY_EXISTS');
  });

  it('the same user can be a member of two organizations', async () => {
    const res = await t.call('POST', '/memberships', { headers: inOrg(foreignOrgId), body: { data: { email: 'bob@example.com', role: 'ADMIN' } } });
    assert.equal(res.status, 201);
  });

  it('a VIEWER may read but not invite, change or remove (403)', async () => {
    const target = await invite('carol@example.com', 'MEMBER');
    assertError(await invite('dave@example.com', 'MEMBER', viewerSa.token), 403, 'Auth:Permission:DENIED');
    assertError(await t.call('PATCH', `/memberships/${target.body.data.id}`, { token: viewerSa.token, body: { data: { role: 'VIEWER' } } }), 403);
    assertError(await t.call('DELETE', `/memberships/${target.body.data.id}`, { token: viewerSa.token }), 403);
    const list = await t.call('GET', '/memberships', { token: viewerSa.token });
    assert.equal(list.status, 200);
  });

  it('an ADMIN may not grant OWNER, by invitation or by PATCH (403)', async () => {
    assertError(await invite('eve@example.com', 'OWNER', adminSa.token), 403);
    const m = await invite('frank@example.com', 'MEMBER', adminSa.token);
    assertError(await t.call('PATCH', `/memberships/${m.body.data.id}`, { token: adminSa.token, body: { data: { role: 'OWNER' } } }), 403);
    const after = await t.call('GET', `/memberships/${m.body.data.id}`);
    assert.equal(after.body.data.role, 'MEMBER');
  });

  it('an ADMIN may not demote or remove an OWNER (403)', async () => {
    const owner = await invite('owner2@example.com', 'OWNER');
    assertError(await t.call('PATCH', `/memberships/${owner.body.data.id}`, { token: adminSa.token, body: { data: { role: 'MEMBER' } } }), 403);
    assertError(await t.call('DELETE', `/memberships/${owner.body.data.id}`, { token: adminSa.token }), 403);
  });

  it('an ADMIN changes and removes non-OWNER members; PATCH returns the full updated membership', async () => {
    const m = await invite('grace@example.com', 'VIEWER', adminSa.token);
    const res = await t.call('PATCH', `/memberships/${m.body.data.id}`, { token: adminSa.token, body: { data: { role: 'ADMIN' } } });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.role, 'ADMIN');
    assert.equal(res.body.data.email, 'grace@example.com');
    assert.equal(res.body.data.createdAt, m.body.data.createdAt);
    const del = await t.call('DELETE', `/memberships/${m.body.data.id}`, { token: adminSa.token });
    assert.equal(del.status, 204);
    assert.equal(del.body, undefined);
    assertError(await t.call('GET', `/memberships/${m.body.data.id}`), 404, 'Api:Membership:NOT_FOUND');
  });

  it('an OWNER grants OWNER; a removed member loses access on the next request', async () => {
    const user = await userCaller(t, 'heidi@example.com', 'MEMBER');
    const res = await t.call('PATCH', `/memberships/${user.membershipId}`, { body: { data: { role: 'OWNER' } } });
    assert.equal(res.status, 200);
    assert.equal((await t.call('GET', '/auth/whoami', { token: user.token })).body.data.role, 'OWNER');
    assert.equal((await t.call('DELETE', `/memberships/${user.membershipId}`)).status, 204);
    assertError(await t.call('GET', '/auth/whoami', { token: user.token }), 403);
  });

  it('the last OWNER can be neither demoted nor removed (409)', async () => {
    const orgId = await createOrganization(t, 'Solo');
    const list = await t.call('GET', '/memberships', { headers: inOrg(orgId) });
    assert.equal(list.body.data.length, 1);
    const ownerId = list.body.data[0].id;
    assertError(
      await t.call('PATCH', `/memberships/${ownerId}`, { headers: inOrg(orgId), body: { data: { role: 'ADMIN' } } }),
      409,
      'Api:Membership:LAST_OWNER',
    );
    assertError(await t.call('DELETE', `/memberships/${ownerId}`, { headers: inOrg(orgId) }), 409, 'Api:Membership:LAST_OWNER');
    // With a second OWNER, the first may go.
    const second = await t.call('POST', '/memberships', { headers: inOrg(orgId), body: { data: { email: 'second@example.com', role: 'OWNER' } } });
    assert.equal(second.status, 201);
    assert.equal((await t.call('PATCH', `/memberships/${ownerId}`, { headers: inOrg(orgId), body: { data: { role: 'ADMIN' } } })).status, 200);
    assertError(await t.call('DELETE', `/memberships/${second.body.data.id}`, { headers: inOrg(orgId) }), 409);
  });

  it('two concurrent demotions of the only two OWNERs leave one OWNER', async () => {
    const orgId = await createOrganization(t, 'Race');
    const first = (await t.call('GET', '/memberships', { headers: inOrg(orgId) })).body.data[0].id;
    const second = (await t.call('POST', '/memberships', { headers: inOrg(orgId), body: { data: { email: 'racer@example.com', role: 'OWNER' } } })).body.data
      .id;
    const results = await Promise.all(
      [first, second].map((id) => t.call('PATCH', `/memberships/${id}`, { headers: inOrg(orgId), body: { data: { role: 'MEMBER' } } })),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409]);
    const owners = (await t.call('GET', '/memberships', { headers: inOrg(orgId) })).body.data.filter((m: { role: string }) => m.role === 'OWNER');
    assert.equal(owners.length, 1);
  });

  it("another organization's membership is 404 for GET, PATCH and DELETE", async () => {
    assertError(await t.call('GET', `/memberships/${foreignMembershipId}`, { token: adminSa.token }), 404);
    assertError(await t.call('PATCH', `/memberships/${foreignMembershipId}`, { token: adminSa.token, body: { data: { role: 'VIEWER' } } }), 404);
    assertError(await t.call('DELETE', `/memberships/${foreignMembershipId}`, { token: adminSa.token }), 404);
    const list = await t.call('GET', '/memberships', { token: adminSa.token });
    assert.ok(!list.body.data.some((m: { id: string }) => m.id === foreignMembershipId));
  });

  it('without a credential every membership route is 401', async () => {
    assertError(await t.call('GET', '/memberships', { token: null }), 401);
    assertError(await t.call('GET', `/memberships/${foreignMembershipId}`, { token: null }), 401);
    assertError(await t.call('POST', '/memberships', { token: null, body: { data: { email: 'x@example.com', role: 'VIEWER' } } }), 401);
    assertError(await t.call('PATCH', `/memberships/${foreignMembershipId}`, { token: 'plk_nope', body: { data: { role: 'VIEWER' } } }), 401);
    assertError(await t.call('DELETE', `/memberships/${foreignMembershipId}`, { token: 'plk_nope' }), 401);
  });

  it('bad membership bodies are 400', async () => {
    const bad = [
      { data: { email: 'x@example.com' } },
      { data: { email: 'x@example.com', role: 'KING' } },
      { data: { email: 'not an email', role: 'VIEWER' } },
      { data: { email: 'x@example.com', role: 'VIEWER', userId: 'u1' } },
      { data: { email: 42, role: 'VIEWER' } },
    ];
    for (const body of bad) assertError(await t.call('POST', '/memberships', { body }), 400, 'Api:Request:INVALID');
    assertError(await t.call('PATCH', `/memberships/${foreignMembershipId}`, { body: { data: {} } }), 400);
    assertError(await t.call('PATCH', `/memberships/${foreignMembershipId}`, { body: { data: { role: 'owner' } } }), 400);
  });
});
