import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { findCloudAccountForIngest } from '../src/cloud-accounts/cloud-accounts.repo.ts';
import { CredentialStore } from '../src/platform/auth/credential-store.ts';
import { hashToken } from '../src/platform/auth/tokens.ts';
import { createDb, type Db } from '../src/platform/db/db.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { serviceAccountCaller, userCaller } from './helpers/callers.ts';

/** Polls until `resolve` throws (or returns something `done` accepts); returns how long it took. */
async function msUntil(check: () => Promise<boolean>, limitMs = 3000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    if (await check()) return Date.now() - started;
    await sleep(5);
  }
  return Infinity;
}

/**
 * How long the setup's change notifications may take to reach a listener, generously: nothing in the
 * product says when one has (the cache only empties), and one arriving late would empty a cache a
 * test then expects to hold an entry.
 */
const NOTIFICATIONS_LANDED_MS = 1_000;

const codeOf = (store: CredentialStore, token: string, org: string | null = null) =>
  store.resolve(token, hashToken(token), org).then(
    () => 'ok',
    (error: { code?: string }) => error.code ?? 'error',
  );

/**
 * The credential cache of every API process: a change made anywhere (another process, or SQL) reaches
 * it through LISTEN/NOTIFY. Each store here stands for a separate process, with its own pool and its own
 * listening connection, and a TTL of a minute, so only a notification can explain what it sees.
 */
describe('credential cache: a revocation, expiry, role change or removal is seen by every process within 1 s', () => {
  let t: TestApp;
  let otherDb: Db;
  let other: CredentialStore;
  before(async () => {
    t = await startTestApp();
    otherDb = createDb(t.database.url, 2);
    other = new CredentialStore(otherDb, { listenUrl: t.database.url, ttlMs: 60_000 });
    await other.start();
  });
  after(async () => {
    await other.close();
    await otherDb.destroy();
    await t.close();
  });

  it('a key revoked through the API stops working in another process within 1 s', async () => {
    const sa = await serviceAccountCaller(t, 'MEMBER');
    assert.equal(await codeOf(other, sa.token), 'ok');
    assert.equal((await t.call('DELETE', `/api-keys/${sa.keyId}`)).status, 204);
    const ms = await msUntil(async () => (await codeOf(other, sa.token)) === 'Auth:Credential:REVOKED');
    assert.ok(ms < 1000, `seen after ${ms} ms`);
  });

  it('a role change and a membership removal made in SQL reach it too', async () => {
    const user = await userCaller(t, 'cached@example.com', 'MEMBER');
    const role = async () => (await other.resolve(user.token, hashToken(user.token), null)).role;
    assert.equal(await role(), 'MEMBER');
    await sql`update memberships set role = 'VIEWER' where id = ${user.membershipId}`.execute(t.db);
    assert.ok((await msUntil(async () => (await role()) === 'VIEWER')) < 1000);
    await sql`delete from memberships where id = ${user.membershipId}`.execute(t.db);
    assert.ok((await msUntil(async () => (await codeOf(other, user.token)) === 'Auth:Organization:FORBIDDEN')) < 1000);
  });

  it('a cached key stops at its expiry, with no notification at all', async () => {
    // Far enough off that a loaded machine still reads the key before it expires.
    const expiresAt = new Date(Date.now() + 2_000).toISOString();
    const key = (await t.call('POST', '/api-keys', { body: { data: { name: 'short', expiresAt } } })).body.data;
    assert.equal(await codeOf(other, key.token), 'ok');
    await sleep(Date.parse(expiresAt) - Date.now() + 20);
    assert.equal(await codeOf(other, key.token), 'Auth:Credential:EXPIRED');
  });

  it("a cloud account's ingest secret rotated, or the account deleted, in another process is seen within 1 s", async () => {
    const created = await t.call('POST', '/cloud-accounts', {
      body: { data: { givenId: 'cached', name: 'Cached', accountId: '123456789012', roleArn: 'arn:aws:iam::123456789012:role/plinth' } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id: string = created.body.data.id;
    let lookups = 0;
    const lookup = () => {
      lookups++;
      return findCloudAccountForIngest(otherDb, id);
    };
    const secretOf = async () => (await other.ingestAccount(id, lookup, () => true))?.ingest_secret_sha256?.toString('hex');
    await sleep(NOTIFICATIONS_LANDED_MS);
    assert.equal(await other.ingestAccount(id, lookup, () => false), undefined, 'a wrong secret finds nothing');
    assert.equal(await other.ingestAccount(id, lookup, () => false), undefined);
    assert.equal(lookups, 2, 'and nothing is kept for it');
    const before = await secretOf();
    assert.ok(before);
    assert.equal(await secretOf(), before);
    assert.equal(lookups, 3, 'an account whose secret matched is kept');
    assert.equal((await t.call('POST', `/cloud-accounts/${id}/ingest-secret`, { body: { data: { previousSecretValidForSeconds: 0 } } })).status, 201);
    assert.ok((await msUntil(async () => (await secretOf()) !== before)) < 1000, 'the new secret is seen');
    assert.equal((await t.call('DELETE', `/cloud-accounts/${id}`)).status, 204);
    assert.ok((await msUntil(async () => (await secretOf()) === undefined)) < 1000, 'the deletion is seen');
  });

  it('serves from memory while nothing changes, and looks every key up when it cannot listen', async () => {
    const sa = await serviceAccountCaller(t, 'VIEWER');
    // Let the notifications of creating it land first: each empties the cache.
    await sleep(NOTIFICATIONS_LANDED_MS);
    assert.equal(await codeOf(other, sa.token), 'ok');
    // Held in memory: an update that bypasses the triggers is not seen (only a notification would tell).
    await sql`alter table api_keys disable trigger api_keys_notify_credentials`.execute(t.db);
    try {
      await sql`update api_keys set revoked_at = now() where id = ${sa.keyId}`.execute(t.db);
      assert.equal(await codeOf(other, sa.token), 'ok');
      const deaf = new CredentialStore(otherDb, { listenUrl: 'postgres://nobody@127.0.0.1:1/none', ttlMs: 60_000 });
      await deaf.start();
      assert.equal(await codeOf(deaf, sa.token), 'Auth:Credential:REVOKED');
      await deaf.close();
    } finally {
      await sql`alter table api_keys enable trigger api_keys_notify_credentials`.execute(t.db);
    }
  });
});

/**
 * The API's own process forgets its cached credentials before answering a request that wrote a
 * credential table, and only then. The notification trigger of the table is disabled in each case and
 * the cache's TTL is a minute, so only the request itself can explain what the next request sees.
 */
describe('credential cache: the API process forgets cached credentials after a request that changed one, and only then', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ credentialCacheTtlMs: 60_000 })));
  after(() => t.close());

  async function withoutNotifications(table: string, body: () => Promise<void>) {
    await sleep(NOTIFICATIONS_LANDED_MS); // The notifications of the setup land first: each empties the cache.
    await sql`alter table ${sql.table(table)} disable trigger ${sql.id(`${table}_notify_credentials`)}`.execute(t.db);
    try {
      await body();
    } finally {
      await sql`alter table ${sql.table(table)} enable trigger ${sql.id(`${table}_notify_credentials`)}`.execute(t.db);
    }
  }

  it('a role lowered through the API is enforced on the very next request', async () => {
    const user = await userCaller(t, 'demoted@example.com', 'MEMBER');
    await withoutNotifications('memberships', async () => {
      assert.equal((await t.call('GET', '/projects', { token: user.token })).status, 200);
      assert.equal((await t.call('PATCH', `/memberships/${user.membershipId}`, { body: { data: { role: 'VIEWER' } } })).status, 200);
      const write = await t.call('POST', '/projects', { token: user.token, body: { data: { givenId: 'after-demotion', name: 'No' } } });
      assert.equal(write.status, 403, JSON.stringify(write.body));
    });
  });

  it('an ingest secret is served from memory, and refused on the very next event once a rotation ended it', async () => {
    const created = await t.call('POST', '/cloud-accounts', {
      body: { data: { givenId: 'rotated', name: 'Rotated', accountId: '123456789012', roleArn: 'arn:aws:iam::123456789012:role/plinth' } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, ingestSecret } = created.body.data;
    const event = (n: number) => ({
      body: {
        id: `event-${n}`,
        'detail-type': 'Something Else',
        source: 'aws.other',
        account: '123456789012',
        time: new Date().toISOString(),
        region: 'eu-west-1',
        detail: {},
      },
      token: null,
      headers: { 'x-plinth-ingest-secret': ingestSecret },
    });
    await withoutNotifications('cloud_accounts', async () => {
      assert.equal((await t.call('POST', `/cloud-accounts/${id}/events`, event(1))).status, 202);
      // Changed behind the API's back (no notification): the account is served from memory.
      await sql`update cloud_accounts set ingest_secret_sha256 = null where id = ${id}`.execute(t.db);
      assert.equal((await t.call('POST', `/cloud-accounts/${id}/events`, event(2))).status, 202);
      assert.equal((await t.call('POST', `/cloud-accounts/${id}/ingest-secret`, { body: { data: { previousSecretValidForSeconds: 0 } } })).status, 201);
      assert.equal((await t.call('POST', `/cloud-accounts/${id}/events`, event(3))).status, 401);
    });
  });

  it('a request that writes no credential table leaves the cache as it is', async () => {
    const sa = await serviceAccountCaller(t, 'MEMBER');
    await withoutNotifications('api_keys', async () => {
      assert.equal((await t.call('GET', '/projects', { token: sa.token })).status, 200);
      // Revoked behind the API's back (no notification): only a lookup would see it.
      await sql`update api_keys set revoked_at = now() where id = ${sa.keyId}`.execute(t.db);
      assert.equal((await t.call('POST', '/projects', { body: { data: { givenId: 'unrelated-write', name: 'Unrelated' } } })).status, 201);
      assert.equal((await t.call('GET', '/projects', { token: sa.token })).status, 200, 'still served from memory');
      // A write of a credential table by anyone empties it.
      assert.equal((await t.call('POST', '/api-keys', { body: { data: { name: 'another' } } })).status, 201);
      assert.equal((await t.call('GET', '/projects', { token: sa.token })).status, 401);
    });
  });
});
