import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { runAuditMaintenance } from '../src/audit/audit-maintenance.ts';
import { verifyAuditChain } from '../src/audit/audit.service.ts';
import { appendAuditEvent } from '../src/platform/audit/audit-writer.repo.ts';
import { loadConfig } from '../src/platform/config.ts';
import { createDb, type Db } from '../src/platform/db/db.ts';
import { newId } from '../src/platform/ids.ts';
import { privilegeProblems } from '../src/platform/db/roles.ts';
import { openDatabase, prepareDatabase, type DatabaseHandle } from '../src/server.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { createStack, triggerRun, waitForRunStatus } from './helpers/engine.ts';
import { startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

const silent = pino({ level: 'silent' });

/** The SQLSTATE a statement failed with, or undefined when it succeeded. */
async function sqlState(db: Db, statement: string): Promise<string | undefined> {
  try {
    await sql.raw(statement).execute(db);
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

const INSUFFICIENT_PRIVILEGE = '42501';

/** A database of this test's own, and the URL of a runtime role (not created yet) on it. */
async function databaseWithRuntimeUrl(role: string) {
  const database = await createTestDatabase();
  const url = new URL(database.url);
  url.username = role;
  url.password = randomBytes(12).toString('hex');
  return { database, runtimeUrl: url.toString() };
}

async function dropRole(role: string) {
  const admin = new pg.Client({ connectionString: process.env.PLINTH_TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`drop role if exists ${role}`).finally(() => admin.end());
}

/**
 * The runtime role, tried as an attacker who reached the service's SQL would: set up the way an
 * operator does (DATABASE_URL names the runtime role, DATABASE_OWNER_URL the owner), by the start itself.
 */
describe("the service's database role: least privilege", { timeout: 180_000 }, () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let owner: Db;
  let runtime: Db;
  let runtimeUrl: string;
  const role = `plinth_rt_${process.pid}_${randomBytes(3).toString('hex')}`;

  before(async () => {
    ({ database, runtimeUrl } = await databaseWithRuntimeUrl(role));
    const config = { ...loadConfig({}), databaseUrl: runtimeUrl, databaseOwnerUrl: database.url };
    handle = await openDatabase(config, silent);
    await prepareDatabase(handle, silent, () => TEST_SECRETS);
    runtime = handle.db;
    owner = createDb(database.url, 2);
  });
  after(async () => {
    await handle?.close();
    await owner?.destroy();
    await database?.drop();
    await dropRole(role);
  });

  it('is created by the start from DATABASE_URL, with nothing to warn of; the owner has everything to warn of', async () => {
    assert.deepEqual(await privilegeProblems(runtime), []);
    const ownerProblems = await privilegeProblems(owner);
    assert.ok(
      ownerProblems.some((p) => p.startsWith('is a superuser')),
      ownerProblems.join('; '),
    );
    // A second start (every process runs it) changes nothing and fails nothing.
    await prepareDatabase(handle, silent, () => TEST_SECRETS);
    assert.deepEqual(await privilegeProblems(runtime), []);
  });

  it('cannot run a program on the database server', async () => {
    assert.equal(await sqlState(runtime, `copy (select 1) to program 'touch /tmp/plinth-pwned'`), INSUFFICIENT_PRIVILEGE);
  });

  it("cannot change roles: not its own privileges, not another's password, no new role", async () => {
    assert.equal(await sqlState(runtime, `alter role ${role} superuser`), INSUFFICIENT_PRIVILEGE);
    assert.equal(await sqlState(runtime, `alter role postgres password 'taken'`), INSUFFICIENT_PRIVILEGE);
    assert.equal(await sqlState(runtime, 'create role intruder login'), INSUFFICIENT_PRIVILEGE);
  });

  it("cannot change the schema: no table of its own, no DDL on the service's", async () => {
    assert.equal(await sqlState(runtime, 'create table public.planted (x int)'), INSUFFICIENT_PRIVILEGE);
    assert.equal(await sqlState(runtime, 'drop table users'), INSUFFICIENT_PRIVILEGE);
    assert.equal(await sqlState(runtime, 'alter table audit_events disable trigger audit_events_append_only'), INSUFFICIENT_PRIVILEGE);
  });

  it("appends to the audit log and reads it, but cannot change, delete or empty it, through the table or a partition, nor delete its chains' heads or mark them for anchoring", async () => {
    const row = {
      id: `aud_${randomBytes(6).toString('hex')}`,
      organization_id: 'org_x',
      seq: 1,
      created_at: new Date(),
      actor_type: 'MEMBERSHIP' as const,
      actor_id: 'u',
      action: 'x.y',
      resource_type: 'x',
      outcome: 'SUCCESS' as const,
      request_id: 'r',
      prev_hash: '',
      hash: 'h',
    };
    await runtime.insertInto('audit_events').values(row).execute();
    assert.equal((await runtime.selectFrom('audit_events').select('id').where('id', '=', row.id).execute()).length, 1);
    const partition = `audit_events_${new Date().toISOString().slice(0, 7).replace('-', '_')}`;
    for (const statement of [
      `update audit_events set action = 'forged' where id = '${row.id}'`,
      `delete from audit_events where id = '${row.id}'`,
      'truncate audit_events',
      `update ${partition} set action = 'forged'`,
      `delete from ${partition}`,
      `insert into ${partition} select * from ${partition}`,
      'delete from audit_chain_heads',
      'truncate audit_chain_heads',
      'insert into audit_anchor_pending values (true)',
      'delete from audit_anchor_pending',
    ]) {
      assert.equal(await sqlState(runtime, `begin; set local plinth.audit_retention = 'on'; ${statement}; commit`), INSUFFICIENT_PRIVILEGE, statement);
      await sql`rollback`.execute(runtime).catch(() => {});
    }
    const [kept] = await owner.selectFrom('audit_events').select('action').where('id', '=', row.id).execute();
    assert.equal(kept?.action, 'x.y');
  });

  it("runs the audit log's maintenance through its functions alone, which take no name from it", async () => {
    assert.deepEqual(await runAuditMaintenance(runtime, TEST_SECRETS), { dropped: [], deleted: 0, leftAlone: [], reanchored: 0 });
    assert.equal(await sqlState(runtime, 'select audit_ensure_partitions(100000)'), '22023', 'a bounded number of months');
    assert.equal(await sqlState(runtime, 'select * from audit_apply_retention(1)'), '42883', 'retention takes no number from its caller');
    // A temporary view of the caller's cannot stand in for a catalog the function reads: this one names
    // every partition after this month's, so a function that read it would drop this month's as old.
    await sql`create table audit_events_2020_01 partition of audit_events for values from ('2020-01-01') to ('2020-02-01')`.execute(owner);
    const partition = `audit_events_${new Date().toISOString().slice(0, 7).replace('-', '_')}`;
    const result = await runtime.connection().execute(async (session) => {
      await sql
        .raw(`create temporary view pg_class as select c.oid, '${partition}'::name as relname, c.relpartbound from pg_catalog.pg_class c`)
        .execute(session);
      return runAuditMaintenance(session, TEST_SECRETS);
    });
    assert.deepEqual(result.dropped, ['audit_events_2020_01']);
    const [kept] = (await sql<{ found: boolean }>`select to_regclass(${`public.${partition}`}) is not null as found`.execute(owner)).rows;
    assert.equal(kept?.found, true, "this month's partition is still there");
  });

  it('cannot shorten an audit chain unseen: retention it calls itself leaves its record, and a retention row it makes up starts no chain', async () => {
    const org = `org_${randomBytes(4).toString('hex')}`;
    await owner.insertInto('organizations').values({ id: org, name: 'Attacked', billing_email: 'billing@example.com' }).execute();
    await sql`create table audit_events_2021_03 partition of audit_events for values from ('2021-03-01') to ('2021-04-01')`.execute(owner);
    for (const at of [new Date('2021-03-15T00:00:00Z'), new Date('2021-03-16T00:00:00Z'), new Date()]) {
      await runtime.transaction().execute((trx) =>
        appendAuditEvent(
          trx,
          TEST_SECRETS,
          {
            organizationId: org,
            actorType: 'MEMBERSHIP',
            actorId: 'u',
            apiKeyId: null,
            action: 'project.create',
            resourceType: 'project',
            resourceId: null,
            outcome: 'SUCCESS',
            statusCode: null,
            errorCode: null,
            requestId: newId(),
            ip: null,
            userAgent: null,
            diff: null,
          },
          at,
        ),
      );
    }
    assert.deepEqual(await verifyAuditChain(runtime, TEST_SECRETS, org), { valid: true, checked: 3 });

    // In SQL alone, without the key: the shortest retention, retention run by hand, a retention row of
    // its own saying so at a seq no walk of the chain reaches, and the retention put back.
    await sql`insert into audit_settings (organization_id, retention_days) values (${org}, 1)`.execute(runtime);
    const { rows } = await sql<{
      result: { deletions: { organizationId: string; toSeq: number; lastHash: string }[] };
    }>`select audit_apply_retention() as result`.execute(runtime);
    const deletion = rows[0]!.result.deletions.find((d) => d.organizationId === org)!;
    assert.equal(deletion.toSeq, 2);
    const forged = (
      seq: number,
    ) => `insert into audit_events (id, organization_id, seq, created_at, actor_type, actor_id, action, resource_type, outcome, request_id, diff, prev_hash, hash)
      values ('${newId()}', '${org}', ${seq}, now(), 'SYSTEM', 'retention', 'audit.retention', 'audit-event', 'SUCCESS', '${newId()}',
              '{"toSeq": 2, "lastHash": "${deletion.lastHash}", "before": "2000-01-01T00:00:00.000Z"}', '', 'forged')`;
    assert.equal(await sqlState(runtime, forged(0)), '23514', 'a chain starts at seq 1');
    assert.equal(await sqlState(runtime, forged(-1)), '23514');
    await sql`update audit_settings set retention_days = 365 where organization_id = ${org}`.execute(runtime);

    const kept = await runtime.selectFrom('audit_events').select(['seq', 'action', 'actor_type']).where('organization_id', '=', org).orderBy('seq').execute();
    assert.deepEqual(
      kept.map((r) => [Number(r.seq), r.action, r.actor_type]),
      [
        [3, 'project.create', 'MEMBERSHIP'],
        [4, 'audit.retention', 'SYSTEM'],
      ],
      'the deletion is recorded',
    );
    const result = await verifyAuditChain(runtime, TEST_SECRETS, org);
    assert.equal(result.valid, false, JSON.stringify(result));
    assert.match(result.reason!, /the anchor does not hold/);
  });
});

const ADMIN = 'plk_runtime_role_admin_token_0123456789abcdefghijklm';

/** What the engine helpers call, over HTTP against a real process. */
function httpCaller(baseUrl: string, token: string): TestApp {
  const call = async (method: string, url: string, options: { body?: unknown; token?: string | null; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${baseUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${options.token ?? token}`, 'content-type': 'application/json', ...options.headers },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: {} };
  };
  return { call } as unknown as TestApp;
}

/** The operator's setup end to end: a real `plinth serve` on the runtime role runs a step and audits it. */
describe('plinth serve as the runtime role', { timeout: 180_000 }, () => {
  let database: TestDatabase;
  let plinth: PlinthProcess;
  let dataDir: string;
  const role = `plinth_rt_${process.pid}_${randomBytes(3).toString('hex')}`;

  before(async () => {
    let runtimeUrl: string;
    ({ database, runtimeUrl } = await databaseWithRuntimeUrl(role));
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-rt-'));
    plinth = await startPlinthProcess(
      {
        DATABASE_URL: runtimeUrl,
        DATABASE_OWNER_URL: database.url,
        PLINTH_DATA_DIR: dataDir,
        PLINTH_ADMIN_TOKEN: ADMIN,
        PLINTH_SANDBOX_UID_BASE: '320000',
        PLINTH_SANDBOX_UID_COUNT: '1000',
        PLINTH_SANDBOX_POOL: '0',
        LOG_LEVEL: 'warn',
      },
      { readyTimeoutMs: 120_000 },
    );
  });
  after(async () => {
    await plinth?.stop(30_000);
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
    await dropRole(role);
  });

  it('serves, audits and runs a step with no warning of its privileges', async () => {
    const t = httpCaller(plinth.baseUrl, ADMIN);
    const stack = await createStack(t, [{ id: 'hello', command: 'echo from the runtime role' }]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 60_000);
    const events = await t.call('GET', '/audit-events?limit=100');
    assert.equal(events.status, 200, JSON.stringify(events.body));
    assert.ok(
      events.body.data.some((e: { resourceId: string }) => e.resourceId === stack.id),
      "the stack's creation was audited",
    );
    assert.ok(!plinth.output().includes('more privileges than it needs'), plinth.output());
  });
});
