import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { freePort, isAlive, isListening, startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

/** The postmaster's pid while the embedded Postgres runs, from its pid file. */
function postmasterPid(dataDir: string): number | undefined {
  const file = path.join(dataDir, 'pg', 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
}

describe('plinth serve with no DATABASE_URL (embedded PostgreSQL)', { timeout: 180_000 }, () => {
  let dataDir: string;
  let pgPort: number;
  let plinth: PlinthProcess | undefined;
  let token: string;
  let orgId: string;
  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-embedded-'));
    pgPort = await freePort();
  });
  after(async () => {
    if (plinth && isAlive(plinth.pid)) plinth.child.kill('SIGKILL');
    const pid = postmasterPid(dataDir);
    if (pid && isAlive(pid)) process.kill(pid, 'SIGINT');
    rmSync(dataDir, { recursive: true, force: true });
  });

  const env = () => ({ PLINTH_DATA_DIR: dataDir, PLINTH_PG_PORT: String(pgPort) });

  it('first start: initializes Postgres in the data dir and prints a generated admin token, also kept in admin-token', async () => {
    plinth = await startPlinthProcess(env(), { readyTimeoutMs: 120_000 });
    const file = path.join(dataDir, 'admin-token');
    token = readFileSync(file, 'utf8').trim();
    assert.match(token, /^plk_/);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(plinth.output().includes(token), 'the token is printed once on stdout');
    assert.ok(existsSync(path.join(dataDir, 'pg', 'PG_VERSION')));
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${postmasterPid(dataDir)}/status`, 'utf8'))![1]);
    assert.notEqual(uid, 0, 'PostgreSQL never runs as root');
    const res = await fetch(`${plinth.baseUrl}/organizations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { name: 'Survivor', billingEmail: 'keep@example.com' } }),
    });
    assert.equal(res.status, 201);
    orgId = (await res.json()).data.id;
  });

  it('serves as a runtime role of its own, neither superuser nor owner; only the start used the superuser', async () => {
    const password = readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
    const admin = new pg.Client({ connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/postgres` });
    await admin.connect();
    try {
      const sessions = await admin.query(`select distinct usename from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()`);
      assert.deepEqual(
        sessions.rows.map((r) => r.usename),
        ['plinth_runtime'],
      );
      const role = await admin.query(`select rolsuper, rolcreaterole, rolcreatedb from pg_roles where rolname = 'plinth_runtime'`);
      assert.deepEqual(role.rows, [{ rolsuper: false, rolcreaterole: false, rolcreatedb: false }]);
      const owned = await admin.query(`select count(*)::int as n from pg_class c join pg_roles r on r.oid = c.relowner where r.rolname = 'plinth_runtime'`);
      assert.equal(owned.rows[0].n, 0);
    } finally {
      await admin.end();
    }
    assert.equal(statSync(path.join(dataDir, 'pg-runtime-password')).mode & 0o777, 0o600);
  });

  it('SIGTERM stops the API and the embedded Postgres, and the process exits 0', async () => {
    assert.ok(plinth);
    const pid = postmasterPid(dataDir);
    assert.ok(pid && isAlive(pid), 'postgres runs while plinth does');
    const { code, signal } = await plinth.stop(60_000);
    assert.equal(signal, null, plinth.output());
    assert.equal(code, 0, plinth.output());
    assert.equal(isAlive(pid), false, 'postgres stopped with plinth');
    assert.equal(await isListening(pgPort), false);
  });

  it('after a restart the data is still there and no new token is generated', async () => {
    plinth = await startPlinthProcess(env(), { readyTimeoutMs: 120_000 });
    assert.ok(!plinth.output().includes('admin token'), plinth.output());
    const res = await fetch(`${plinth.baseUrl}/organizations/${orgId}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).data.name, 'Survivor');
    const pid = postmasterPid(dataDir);
    const { code } = await plinth.stop(60_000);
    assert.equal(code, 0, plinth.output());
    assert.equal(pid !== undefined && isAlive(pid), false);
    assert.equal(await isListening(pgPort), false);
  });
});
