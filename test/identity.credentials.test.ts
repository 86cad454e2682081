import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashToken } from '../src/platform/auth/tokens.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, userCaller, type ServiceAccountCaller, type UserCaller } from './helpers/callers.ts';

describe('service accounts', () => {
  let t: TestApp;
  let adminSa: ServiceAccountCaller;
  let viewerSa: ServiceAccountCaller;
  let foreignSaId: string;
  before(async () => {
    t = await startTestApp();
    adminSa = await serviceAccountCaller(t, 'ADMIN');
    viewerSa = await serviceAccountCaller(t, 'VIEWER');
    foreignSaId = (await serviceAccountCaller(t, 'MEMBER', await createOrganization(t, 'Foreign'))).serviceAccountId;
  });
  after(() => t.close());

  it('create (201), read, list, rename and delete (204) a service account', async () => {
    const created = await t.call('POST', '/service-accounts', { token: adminSa.token, body: { data: { name: 'ci', role: 'MEMBER' } } });
    assert.equal(created.status, 201);
    const sa = created.body.data;
    assert.equal(sa.name, 'ci');
    assert.equal(sa.role, 'MEMBER');
    assert.match(sa.createdAt, /Z$/);
    assert.deepEqual((await t.call('GET', `/service-accounts/${sa.id}`, { token: viewerSa.token })).body.data, sa);
    const list = await t.call('GET', '/service-accounts', { token: viewerSa.token });
    assert.ok(list.body.data.some((x: { id: string }) => x.id === sa.id));
    const patched = await t.call('PATCH', `/service-accounts/${sa.id}`, { token: adminSa.token, body: { data: { name: 'ci-bot' } } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.data.name, 'ci-bot');
    assert.equal(patched.body.data.role, 'MEMBER');
    const del = await t.call('DELETE', `/service-accounts/${sa.id}`, { token: adminSa.token });
    assert.equal(del.status, 204);
    assertError(await t.call('GET', `/service-accounts/${sa.id}`), 404, 'Api:ServiceAccount:NOT_FOUND');
  });

  it("a role change applies on the service account key's next request", async () => {
    const sa = await serviceAccountCaller(t, 'VIEWER');
    await t.call('PATCH', `/service-accounts/${sa.serviceAccountId}`, { body: { data: { role: 'ADMIN' } } });
    assert.equal((await t.call('GET', '/auth/whoami', { token: sa.token })).body.data.role, 'ADMIN');
  });

  it('deleting a service account makes its keys fail on the next request (401)', async () => {
    const sa = await serviceAccountCaller(t, 'MEMBER');
    assert.equal((await t.call('GET', '/auth/whoami', { token: sa.token })).status, 200);
    assert.equal((await t.call('DELETE', `/service-accounts/${sa.serviceAccountId}`)).status, 204);
    assertError(await t.call('GET', '/auth/whoami', { token: sa.token }), 401);
  });

  it('a VIEWER may not create, change or delete service accounts (403)', async () => {
    assertError(await t.call('POST', '/service-accounts', { token: viewerSa.token, body: { data: { name: 'x', role: 'VIEWER' } } }), 403);
    assertError(await t.call('PATCH', `/service-accounts/${adminSa.serviceAccountId}`, { token: viewerSa.token, body: { data: { name: 'x' } } }), 403);
    assertError(await t.call('DELETE', `/service-accounts/${adminSa.serviceAccountId}`, { token: viewerSa.token }), 403);
  });

  it('an ADMIN may not create, promote to, change or delete an OWNER service account (403)', async () => {
    assertError(await t.call('POST', '/service-accounts', { token: adminSa.token, body: { data: { name: 'x', role: 'OWNER' } } }), 403);
    const member = await t.call('POST', '/service-accounts', { token: adminSa.token, body: { data: { name: 'm', role: 'MEMBER' } } });
    assertError(await t.call('PATCH', `/service-accounts/${member.body.data.id}`, { token: adminSa.token, body: { data: { role: 'OWNER' } } }), 403);
    const owner = await serviceAccountCaller(t, 'OWNER');
    assertError(await t.call('PATCH', `/service-accounts/${owner.serviceAccountId}`, { token: adminSa.token, body: { data: { name: 'y' } } }), 403);
    assertError(await t.call('DELETE', `/service-accounts/${owner.serviceAccountId}`, { token: adminSa.token }), 403);
    assertError(await t.call('POST', '/api-keys', { token: adminSa.token, body: { data: { name: 'k', serviceAccountId: owner.serviceAccountId } } }), 403);
  });

  it("another organization's service account is 404", async () => {
    assertError(await t.call('GET', `/service-accounts/${foreignSaId}`, { token: adminSa.token }), 404);
    assertError(await t.call('PATCH', `/service-accounts/${foreignSaId}`, { token: adminSa.token, body: { data: { name: 'x' } } }), 404);
    assertError(await t.call('DELETE', `/service-accounts/${foreignSaId}`, { token: adminSa.token }), 404);
    assertError(await t.call('POST', '/api-keys', { token: adminSa.token, body: { data: { name: 'k', serviceAccountId: foreignSaId } } }), 404);
  });

  it('without a credential every service-account route is 401', async () => {
    assertError(await t.call('GET', '/service-accounts', { token: null }), 401);
    assertError(await t.call('GET', `/service-accounts/${foreignSaId}`, { token: null }), 401);
    assertError(await t.call('POST', '/service-accounts', { token: null, body: { data: { name: 'x', role: 'VIEWER' } } }), 401);
    assertError(await t.call('PATCH', `/service-accounts/${foreignSaId}`, { token: 'plk_x', body: { data: { name: 'x' } } }), 401);
    assertError(await t.call('DELETE', `/service-accounts/${foreignSaId}`, { token: 'plk_x' }), 401);
  });

  it('bad service-account bodies are 400', async () => {
    for (const body of [
      { data: { name: 'x' } },
      { data: { name: 'x', role: 'ROOT' } },
      { data: { name: 7, role: 'VIEWER' } },
      { data: { name: 'x', role: 'VIEWER', organizationId: 'other' } },
    ]) {
      assertError(await t.call('POST', '/service-accounts', { body }), 400, 'Api:Request:INVALID');
    }
    assertError(await t.call('PATCH', `/service-accounts/${adminSa.serviceAccountId}`, { body: { data: { id: 'new' } } }), 400);
  });
});

describe('API keys', () => {
  let t: TestApp;
  let member: UserCaller;
  let viewerSa: ServiceAccountCaller;
  let foreignKeyId: string;
  before(async () => {
    t = await startTestApp();
    member = await userCaller(t, 'member@example.com', 'MEMBER');
    viewerSa = await serviceAccountCaller(t, 'VIEWER');
    foreignKeyId = (await serviceAccountCaller(t, 'MEMBER', await createOrganization(t, 'Foreign'))).keyId;
  });
  after(() => t.close());

  it("a super-administrator issues an invited member's first key; nobody else may issue keys for another user", async () => {
    const invited = await t.call('POST', '/memberships', { body: { data: { email: 'invitee@example.com', role: 'VIEWER' } } });
    const userId = invited.body.data.userId;
    const issued = await t.call('POST', '/api-keys', { body: { data: { name: 'first key', userId } } });
    assert.equal(issued.status, 201);
    assert.equal(issued.body.data.userId, userId);
    const who = await t.call('GET', '/auth/whoami', { token: issued.body.data.token });
    assert.equal(who.body.data.email, 'invitee@example.com');
    assert.equal(who.body.data.role, 'VIEWER');
    assertError(await t.call('POST', '/api-keys', { token: member.token, body: { data: { name: 'x', userId } } }), 403, 'Auth:Permission:DENIED');
    const outsider = (
      await t.call('POST', '/memberships', {
        headers: inOrg(await createOrganization(t, 'Elsewhere')),
        body: { data: { email: 'outsider@example.com', role: 'OWNER' } },
      })
    ).body.data.userId;
    assertError(await t.call('POST', '/api-keys', { body: { data: { name: 'x', userId: outsider } } }), 404, 'Api:User:NOT_FOUND');
    assertError(
      await t.call('POST', '/api-keys', { body: { data: { name: 'x', userId, serviceAccountId: viewerSa.serviceAccountId } } }),
      422,
      'Api:ApiKey:AMBIGUOUS_OWNER',
    );
  });

  it('a user creates a key for themselves: the plk_ token is shown once and stored only as its hash', async () => {
    const res = await t.call('POST', '/api-keys', { token: member.token, body: { data: { name: 'laptop' } } });
    assert.equal(res.status, 201);
    const key = res.body.data;
    assert.match(key.token, /^plk_[A-Za-z0-9_-]{43,}$/);
    assert.equal(key.userId, member.userId);
    assert.ok(key.token.startsWith(key.tokenPrefix));
    const who = await t.call('GET', '/auth/whoami', { token: key.token });
    assert.equal(who.body.data.userId, member.userId);
    assert.equal(who.body.data.identityId, key.id);
    const read = await t.call('GET', `/api-keys/${key.id}`, { token: member.token });
    assert.equal(read.status, 200);
    assert.equal(read.body.data.token, undefined);
    const list = await t.call('GET', '/api-keys', { token: member.token });
    assert.ok(list.body.data.every((k: { token?: string }) => k.token === undefined));
    const row = await t.db.selectFrom('api_keys').selectAll().where('id', '=', key.id).executeTakeFirstOrThrow();
    assert.equal(row.token_hash, hashToken(key.token));
    assert.ok(!JSON.stringify(row).includes(key.token));
  });

  it('two keys never share a token', async () => {
    const a = await t.call('POST', '/api-keys', { body: { data: { name: 'a' } } });
    const b = await t.call('POST', '/api-keys', { body: { data: { name: 'b' } } });
    assert.notEqual(a.body.data.token, b.body.data.token);
  });

  it('a revoked key fails on the very next request (401), and revoking again is harmless', async () => {
    const key = (await t.call('POST', '/api-keys', { token: member.token, body: { data: { name: 'temp' } } })).body.data;
    assert.equal((await t.call('GET', '/auth/whoami', { token: key.token })).status, 200);
    assert.equal((await t.call('DELETE', `/api-keys/${key.id}`, { token: member.token })).status, 204);
    assertError(await t.call('GET', '/auth/whoami', { token: key.token }), 401, 'Auth:Credential:REVOKED');
    assert.equal((await t.call('DELETE', `/api-keys/${key.id}`, { token: member.token })).status, 204);
    const read = await t.call('GET', `/api-keys/${key.id}`, { token: member.token });
    assert.match(read.body.data.revokedAt, /Z$/);
  });

  it('a key can revoke itself, and is refused right after', async () => {
    const key = (await t.call('POST', '/api-keys', { token: member.token, body: { data: { name: 'self' } } })).body.data;
    assert.equal((await t.call('DELETE', `/api-keys/${key.id}`, { token: key.token })).status, 204);
    assertError(await t.call('GET', '/api-keys', { token: key.token }), 401);
  });

  it('an expired key is 401 Auth:Credential:EXPIRED', async () => {
    const expiresAt = new Date(Date.now() + 1000).toISOString();
    const key = (await t.call('POST', '/api-keys', { token: member.token, body: { data: { name: 'short', expiresAt } } })).body.data;
    assert.equal(key.expiresAt, expiresAt);
    assert.equal((await t.call('GET', '/auth/whoami', { token: key.token })).status, 200);
    await sleep(Date.parse(expiresAt) - Date.now() + 50);
    assertError(await t.call('GET', '/auth/whoami', { token: key.token }), 401, 'Auth:Credential:EXPIRED');
  });

  it('expiresAt in the past is 422; one that is not a date-time is 400', async () => {
    assertError(await t.call('POST', '/api-keys', { body: { data: { name: 'old', expiresAt: '2001-01-01T00:00:00Z' } } }), 422, 'Api:ApiKey:INVALID_EXPIRY');
    assertError(await t.call('POST', '/api-keys', { body: { data: { name: 'old', expiresAt: 'tomorrow' } } }), 400);
  });

  it('an ADMIN issues a key for a service account; the key acts as that account', async () => {
    const sa = await t.call('POST', '/service-accounts', { body: { data: { name: 'deployer', role: 'MEMBER' } } });
    const key = await t.call('POST', '/api-keys', { body: { data: { name: 'k', serviceAccountId: sa.body.data.id } } });
    assert.equal(key.status, 201);
    assert.equal(key.body.data.serviceAccountId, sa.body.data.id);
    assert.equal(key.body.data.userId, undefined);
    const who = await t.call('GET', '/auth/whoami', { token: key.body.data.token });
    assert.equal(who.body.data.principalType, 'SERVICE_ACCOUNT');
    const listed = await t.call('GET', `/api-keys?serviceAccountId=${sa.body.data.id}`);
    assert.deepEqual(
      listed.body.data.map((k: { id: string }) => k.id),
      [key.body.data.id],
    );
  });

  it("a caller below ADMIN sees and revokes only their own keys; others' are 404", async () => {
    const adminKey = (await t.call('POST', '/api-keys', { body: { data: { name: 'admin-only' } } })).body.data;
    const mine = await t.call('GET', '/api-keys', { token: member.token });
    assert.ok(mine.body.data.length > 0);
    assert.ok(mine.body.data.every((k: { userId?: string }) => k.userId === member.userId));
    const saList = await t.call('GET', '/api-keys', { token: viewerSa.token });
    assert.deepEqual(
      saList.body.data.map((k: { id: string }) => k.id),
      [viewerSa.keyId],
    );
    assertError(await t.call('GET', `/api-keys/${adminKey.id}`, { token: member.token }), 404);
    assertError(await t.call('DELETE', `/api-keys/${adminKey.id}`, { token: member.token }), 404);
    assert.equal((await t.call('GET', '/auth/whoami', { token: adminKey.token })).status, 200);
    const all = await t.call('GET', '/api-keys');
    assert.ok(all.body.data.some((k: { id: string }) => k.id === adminKey.id));
  });

  it('a VIEWER service account may not issue keys for another service account (403)', async () => {
    const other = await t.call('POST', '/service-accounts', { body: { data: { name: 'other', role: 'VIEWER' } } });
    assertError(await t.call('POST', '/api-keys', { token: viewerSa.token, body: { data: { name: 'k', serviceAccountId: other.body.data.id } } }), 403);
  });

  it("another organization's key is 404 for GET and DELETE", async () => {
    assertError(await t.call('GET', `/api-keys/${foreignKeyId}`), 404, 'Api:ApiKey:NOT_FOUND');
    assertError(await t.call('DELETE', `/api-keys/${foreignKeyId}`), 404);
  });

  it('without a credential every API-key route is 401', async () => {
    assertError(await t.call('GET', '/api-keys', { token: null }), 401);
    assertError(await t.call('GET', `/api-keys/${foreignKeyId}`, { token: null }), 401);
    assertError(await t.call('POST', '/api-keys', { token: null, body: { data: { name: 'x' } } }), 401);
    assertError(await t.call('DELETE', `/api-keys/${foreignKeyId}`, { token: 'plk_x' }), 401);
  });

  it('bad API-key bodies are 400', async () => {
    for (const body of [
      { data: {} },
      { data: { name: '' } },
      { data: { name: ['x'] } },
      { data: { name: 'x', token: 'plk_mine' } },
      { data: { name: 'x', userId: 5 } },
    ]) {
      assertError(await t.call('POST', '/api-keys', { body }), 400, 'Api:Request:INVALID');
    }
    assertError(await t.call('GET', '/api-keys?owner=me'), 400);
  });
});
