import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import { ensureAdmin } from '../src/credentials/bootstrap.ts';
import { loadConfig } from '../src/platform/config.ts';
import { createDb, type Db } from '../src/platform/db/db.ts';
import { buildApp } from '../src/platform/http/app.ts';
import { ROUTES } from '../src/routes.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { TEST_SECRETS } from './helpers/app.ts';

const TOKEN = 'plk_bootstrap_test_token_abcdefghijklmnopqrstuvwxyz012345';
const EMAIL = 'root@example.com';

async function counts(db: Db) {
  const count = async (table: 'users' | 'organizations' | 'api_keys' | 'memberships') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { users: await count('users'), organizations: await count('organizations'), keys: await count('api_keys'), memberships: await count('memberships') };
}

async function whoami(db: Db, token: string) {
  const app = await buildApp({ db, config: loadConfig({}), routes: ROUTES, secrets: TEST_SECRETS });
  try {
    const res = await app.inject({ method: 'GET', url: '/auth/whoami', headers: { authorization: `Bearer ${token}` } });
    return { status: res.statusCode, body: res.json() };
  } finally {
    await app.close();
  }
}

describe('ensureAdmin (the PLINTH_ADMIN_TOKEN bootstrap)', () => {
  let database: TestDatabase;
  let db: Db;
  let dataDir: string;
  before(async () => {
    database = await createTestDatabase();
    db = createDb(database.url, 4);
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });
  // Each test starts from an empty database (cheaper than a new one per test).
  beforeEach(async () => {
    await sql`truncate organizations, users cascade`.execute(db);
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-boot-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('with a token, twice: one SUPER_ADMIN, OWNER of one Default organization, holding one key with exactly that token', async () => {
    const first = await ensureAdmin(db, { adminToken: TOKEN, adminEmail: EMAIL, dataDir });
    const second = await ensureAdmin(db, { adminToken: TOKEN, adminEmail: EMAIL, dataDir });
    assert.equal(first.generatedToken, undefined);
    assert.equal(second.adminUserId, first.adminUserId);
    assert.deepEqual(await counts(db), { users: 1, organizations: 1, keys: 1, memberships: 1 });
    assert.equal(existsSync(path.join(dataDir, 'admin-token')), false, 'a configured token is never written to disk');
    const res = await whoami(db, TOKEN);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.email, EMAIL);
    assert.equal(res.body.data.globalRole, 'SUPER_ADMIN');
    assert.equal(res.body.data.role, 'OWNER');
    assert.equal(res.body.data.organizationName, 'Default');
  });

  it('several processes starting at once still make one admin, one organization and one key', async () => {
    await Promise.all([1, 2, 3, 4].map(() => ensureAdmin(db, { adminToken: TOKEN, adminEmail: EMAIL })));
    assert.deepEqual(await counts(db), { users: 1, organizations: 1, keys: 1, memberships: 1 });
  });

  it('without a token on an empty database: generates one, writes it to <dataDir>/admin-token (0600), and it works', async () => {
    const result = await ensureAdmin(db, { adminEmail: EMAIL, dataDir });
    assert.match(result.generatedToken ?? '', /^plk_[A-Za-z0-9_-]{43}$/);
    const file = path.join(dataDir, 'admin-token');
    assert.equal(readFileSync(file, 'utf8').trim(), result.generatedToken);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal((await whoami(db, result.generatedToken!)).status, 200);
    const stored = await db.selectFrom('api_keys').select('token_hash').execute();
    assert.ok(!JSON.stringify(stored).includes(result.generatedToken!));
  });

  it('without a token, a second run generates nothing and leaves the file alone', async () => {
    const first = await ensureAdmin(db, { adminEmail: EMAIL, dataDir });
    const file = path.join(dataDir, 'admin-token');
    const mtime = statSync(file).mtimeMs;
    const second = await ensureAdmin(db, { adminEmail: EMAIL, dataDir });
    assert.equal(second.generatedToken, undefined);
    assert.equal(readFileSync(file, 'utf8').trim(), first.generatedToken);
    assert.equal(statSync(file).mtimeMs, mtime);
    assert.deepEqual(await counts(db), { users: 1, organizations: 1, keys: 1, memberships: 1 });
  });

  it('without a token, a database that already has users gets no admin', async () => {
    await db.insertInto('users').values({ id: 'u1', email: 'someone@example.com' }).execute();
    const result = await ensureAdmin(db, { adminEmail: EMAIL, dataDir });
    assert.equal(result.generatedToken, undefined);
    assert.deepEqual(await counts(db), { users: 1, organizations: 0, keys: 0, memberships: 0 });
  });

  it('a token given later promotes the existing admin and adds the key, keeping the Default organization', async () => {
    const generated = await ensureAdmin(db, { adminEmail: EMAIL, dataDir });
    await ensureAdmin(db, { adminToken: TOKEN, adminEmail: EMAIL, dataDir });
    assert.deepEqual(await counts(db), { users: 1, organizations: 1, keys: 2, memberships: 1 });
    assert.equal((await whoami(db, TOKEN)).status, 200);
    assert.equal((await whoami(db, generated.generatedToken!)).status, 200);
  });

  it('an existing user with the admin email is made SUPER_ADMIN', async () => {
    await db.insertInto('users').values({ id: 'u1', email: EMAIL.toUpperCase() }).execute();
    await ensureAdmin(db, { adminToken: TOKEN, adminEmail: EMAIL });
    const users = await db.selectFrom('users').select(['id', 'global_role']).execute();
    assert.deepEqual(users, [{ id: 'u1', global_role: 'SUPER_ADMIN' }]);
  });
});
