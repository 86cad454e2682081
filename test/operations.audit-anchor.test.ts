import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Migrator, sql, type Migration } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { anchorChainsWrittenBefore, runAuditMaintenance } from '../src/audit/audit-maintenance.ts';
import { verifyAuditChain } from '../src/audit/audit.service.ts';
import { appendAuditEvent } from '../src/platform/audit/audit-writer.repo.ts';
import { chainHash } from '../src/platform/audit/chain.ts';
import { createDb, type Executor } from '../src/platform/db/db.ts';
import { migrateToLatest } from '../src/platform/db/migrate.ts';
import { newId } from '../src/platform/ids.ts';
import { generateSecretKeyText, keyIdOf, parseSecretKey, SecretBox } from '../src/platform/secrets/secret-box.ts';
import { anchorKeyOf, prepareDatabase, type DatabaseHandle } from '../src/server.ts';
import { startTestApp, TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { databaseUrl } from './helpers/database.ts';
import { createOrganization, inOrg } from './helpers/callers.ts';

const DAY = 86_400_000;

/** The first instant (UTC) of the month `at` falls in, `monthsBack` months earlier. */
function monthStart(at: Date, monthsBack = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() - monthsBack, 1));
}

/** Where retention cuts a chain that keeps `days`: the first day of the month its horizon falls in. */
function cutoffOf(days: number): Date {
  return monthStart(new Date(Date.now() - days * DAY));
}

describe("the audit chain's anchor and retention", () => {
  let t: TestApp;
  const silent = pino({ level: 'silent' });

  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  /** A partition for the month of `at`, as the maintenance of that month would have made it. */
  async function ensureMonth(at: Date) {
    const from = monthStart(at);
    const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
    const name = `audit_events_${from.toISOString().slice(0, 7).replace('-', '_')}`;
    await sql
      .raw(`create table if not exists ${name} partition of audit_events for values from ('${from.toISOString()}') to ('${to.toISOString()}')`)
      .execute(t.db);
  }

  /** Appends `n` rows to the organization's chain as if written at `at` (the API appends at now). */
  async function appendAt(organizationId: string, at: Date, n: number) {
    await ensureMonth(at);
    await t.db.transaction().execute(async (trx) => {
      for (let i = 0; i < n; i++) {
        await appendAuditEvent(
          trx,
          TEST_SECRETS,
          {
            organizationId,
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
            diff: { name: `then ${i}` },
          },
          at,
        );
      }
    });
  }

  /** An organization with `n` rows written through the API. */
  async function orgWithRows(name: string, n: number) {
    const org = await createOrganization(t, name);
    for (let i = 0; i < n; i++) {
      const res = await t.call('POST', '/projects', { headers: inOrg(org), body: { data: { givenId: `p${i}`, name: `P${i}` } } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    return org;
  }

  async function verify(org: string) {
    const res = await t.call('GET', '/audit-events/verify', { headers: inOrg(org) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data as { valid: boolean; checked: number; brokenAtSeq?: number; reason?: string };
  }

  /** What a database operator can do: delete audit rows past the append-only trigger. */
  async function deleteAsOperator(org: string, where: string) {
    await t.db.transaction().execute(async (trx) => {
      await sql`select set_config('plinth.audit_retention', 'on', true)`.execute(trx);
      await sql.raw(`delete from audit_events where organization_id = '${org}' and ${where}`).execute(trx);
    });
  }

  async function rowsOf(org: string) {
    const { rows } = await sql<any>`select * from audit_events where organization_id = ${org} order by seq`.execute(t.db);
    return rows;
  }

  /**
   * What a role that may insert audit rows (the runtime role) can make up without the key: an
   * `audit.retention` row of the platform's, hashed as Plinth hashes rows, saying retention deleted
   * every row up to `toSeq`, the last of which had `lastHash`.
   */
  async function forgeRetentionRow(org: string, seq: number, toSeq: number, lastHash: string, prevHash = '', db: Executor = t.db) {
    const fields = {
      id: newId(),
      organizationId: org,
      seq,
      createdAt: new Date().toISOString(),
      actorType: 'SYSTEM',
      actorId: 'retention',
      apiKeyId: null,
      action: 'audit.retention',
      resourceType: 'audit-event',
      resourceId: null,
      outcome: 'SUCCESS',
      statusCode: null,
      errorCode: null,
      requestId: newId(),
      ip: null,
      userAgent: null,
      diff: { before: '2000-01-01T00:00:00.000Z', toSeq, lastHash },
    };
    await db
      .insertInto('audit_events')
      .values({
        id: fields.id,
        organization_id: org,
        seq,
        created_at: new Date(fields.createdAt),
        actor_type: 'SYSTEM',
        actor_id: 'retention',
        action: fields.action,
        resource_type: fields.resourceType,
        outcome: 'SUCCESS',
        request_id: fields.requestId,
        diff: JSON.stringify(fields.diff),
        prev_hash: prevHash,
        hash: chainHash(prevHash, fields),
      })
      .execute();
  }

  it('an untouched chain verifies against its anchor, kept beside its head', async () => {
    const org = await orgWithRows('Untouched', 3);
    assert.deepEqual(await verify(org), { valid: true, checked: 3 });
    const head = await t.db.selectFrom('audit_chain_heads').selectAll().where('organization_id', '=', org).executeTakeFirstOrThrow();
    assert.match(head.mac!, new RegExp(`^${TEST_SECRETS.currentKeyId}:[0-9a-f]{64}$`));
  });

  it('deleting the oldest row is reported', async () => {
    const org = await orgWithRows('Oldest deleted', 4);
    await deleteAsOperator(org, 'seq = 1');
    const result = await verify(org);
    assert.deepEqual({ valid: result.valid, at: result.brokenAtSeq }, { valid: false, at: 1 });
    assert.match(result.reason!, /rows 1 to 1 are missing, and retention never deleted any/);
  });

  it('deleting every row of an organization is reported', async () => {
    const org = await orgWithRows('All deleted', 3);
    await deleteAsOperator(org, 'true');
    const result = await verify(org);
    assert.equal(result.valid, false);
    assert.match(result.reason!, /every row is missing: the anchor vouches for rows up to 3/);
  });

  it('deleting a middle row is reported', async () => {
    const org = await orgWithRows('Middle deleted', 5);
    await deleteAsOperator(org, 'seq = 3');
    assert.deepEqual(await verify(org), { valid: false, checked: 2, brokenAtSeq: 3, reason: 'a row is missing' });
  });

  it('deleting the newest rows is reported, and so is a head rewritten to match, which later appends do not vouch for', async () => {
    const org = await orgWithRows('Newest deleted', 5);
    await deleteAsOperator(org, 'seq >= 4');
    const cut = await verify(org);
    assert.deepEqual({ valid: cut.valid, at: cut.brokenAtSeq }, { valid: false, at: 4 });
    assert.match(cut.reason!, /rows after 3 are missing: the anchor vouches for rows up to 5/);

    // The runtime role may update the head (every append does): without the key, not its anchor.
    const [third] = (await rowsOf(org)).slice(-1);
    await sql`update audit_chain_heads set seq = 3, hash = ${third.hash} where organization_id = ${org}`.execute(t.db);
    const rewritten = await verify(org);
    assert.equal(rewritten.valid, false);
    assert.match(rewritten.reason!, /the anchor does not hold: its chain head was rewritten outside Plinth/);

    const res = await t.call('POST', '/projects', { headers: inOrg(org), body: { data: { givenId: 'after', name: 'After' } } });
    assert.equal(res.status, 201, 'the log still takes appends');
    const later = await verify(org);
    assert.equal(later.valid, false, 'an append after the rewrite does not move the anchor onto it');
    assert.match(later.reason!, /the anchor does not hold/);
  });

  it('deleting rows past the retention horizon by hand is reported, and retention then leaves the chain as it is', async () => {
    const org = await createOrganization(t, 'Old rows deleted by hand');
    const old = new Date(monthStart(new Date(), 20).getTime() + 14 * DAY);
    const older = new Date(monthStart(new Date(), 18).getTime() + 14 * DAY);
    await appendAt(org, old, 2);
    await appendAt(org, older, 2);
    await t.call('POST', '/projects', { headers: inOrg(org), body: { data: { givenId: 'now', name: 'Now' } } });
    assert.equal((await verify(org)).valid, true);

    await deleteAsOperator(org, `created_at < '${monthStart(old, -1).toISOString()}'`);
    const result = await verify(org);
    assert.deepEqual({ valid: result.valid, at: result.brokenAtSeq }, { valid: false, at: 1 });
    assert.match(result.reason!, /rows 1 to 2 are missing, and retention never deleted any/);

    const { leftAlone } = await runAuditMaintenance(t.db, TEST_SECRETS, silent);
    assert.ok(leftAlone.includes(org), 'retention deletes nothing of a chain something else cut');
    assert.equal((await rowsOf(org)).length, 3);
    assert.equal((await verify(org)).reason, result.reason, 'the break still shows');
  });

  it('retention deletes whole months past the horizon, records it in the chain, and the chain still verifies', async () => {
    const short = await createOrganization(t, 'Keeps 31 days');
    const cutoff = cutoffOf(31);
    await appendAt(short, new Date(cutoff.getTime() - 20 * DAY), 3);
    // Older than 31 days, but in a month the horizon has not passed whole: kept.
    await appendAt(short, new Date(cutoff.getTime() + DAY), 2);
    const patch = await t.call('PATCH', '/audit-settings', { headers: inOrg(short), body: { data: { retentionDays: 31 } } });
    assert.equal(patch.status, 200, JSON.stringify(patch.body));
    const ancient = await createOrganization(t, 'Rows of 2020');
    await appendAt(ancient, new Date('2020-01-15T00:00:00Z'), 2);
    await t.call('POST', '/projects', { headers: inOrg(ancient), body: { data: { givenId: 'now', name: 'Now' } } });
    const before = await rowsOf(short);

    const { dropped, deleted } = await runAuditMaintenance(t.db, TEST_SECRETS, silent);
    assert.ok(dropped.includes('audit_events_2020_01'), JSON.stringify(dropped));
    assert.ok(deleted >= 5, `${deleted} rows deleted`);

    const after = await rowsOf(short);
    assert.deepEqual(
      after.map((r) => Number(r.seq)),
      [4, 5, 6, 7],
      'the three rows before the cutoff went; the rest stayed',
    );
    const record = after.at(-1);
    assert.equal(record.action, 'audit.retention');
    assert.equal(record.actor_type, 'SYSTEM');
    assert.deepEqual(record.diff, {
      retentionDays: 31,
      before: cutoff.toISOString(),
      fromSeq: 1,
      toSeq: 3,
      count: 3,
      fromCreatedAt: before[0].created_at.toISOString(),
      toCreatedAt: before[2].created_at.toISOString(),
      lastHash: before[2].hash,
    });
    assert.equal(after[0].prev_hash, before[2].hash, 'the oldest kept row links to the last one deleted');
    assert.deepEqual(await verify(short), { valid: true, checked: 4 });
    const events = await t.call('GET', '/audit-events?action=audit.retention', { headers: inOrg(short) });
    assert.equal(events.body.data[0].actorType, 'SYSTEM');

    assert.deepEqual(
      (await rowsOf(ancient)).map((r) => [Number(r.seq), r.action]),
      [
        [3, 'project.create'],
        [4, 'audit.retention'],
      ],
    );
    assert.deepEqual(await verify(ancient), { valid: true, checked: 2 });

    const again = await runAuditMaintenance(t.db, TEST_SECRETS, silent);
    assert.equal(again.deleted, 0, 'a second run finds nothing more to delete');
    assert.equal((await verify(short)).valid, true);

    // Past what retention recorded, a row deleted by hand shows.
    await deleteAsOperator(short, 'seq = 4');
    const cut = await verify(short);
    assert.deepEqual({ valid: cut.valid, at: cut.brokenAtSeq }, { valid: false, at: 4 });
    assert.match(cut.reason!, /rows 4 to 4 are missing: retention deleted rows only up to 3/);
  });

  it('trusts no retention row outside the chain it walked, not even one below seq 1 from before rows had to start there', async () => {
    const org = await createOrganization(t, 'Forged retention row');
    await appendAt(org, new Date(monthStart(new Date(), 20).getTime() + 14 * DAY), 2);
    await t.call('POST', '/projects', { headers: inOrg(org), body: { data: { givenId: 'now', name: 'Now' } } });
    const [, second] = await rowsOf(org);
    await deleteAsOperator(org, 'seq <= 2');
    assert.equal((await verify(org)).valid, false);

    await assert.rejects(forgeRetentionRow(org, 0, 2, second.hash), /audit_events_seq_check/);
    // A row of that kind left from before the constraint (it does not check the rows it found).
    await t.db.transaction().execute(async (trx) => {
      await sql`alter table audit_events drop constraint audit_events_seq_check`.execute(trx);
      await forgeRetentionRow(org, 0, 2, second.hash, '', trx);
      await sql`alter table audit_events add constraint audit_events_seq_check check (seq >= 1) not valid`.execute(trx);
    });
    const result = await verify(org);
    assert.deepEqual({ valid: result.valid, at: result.brokenAtSeq }, { valid: false, at: 1 }, JSON.stringify(result));
  });

  it('validates the constraints the migration added unchecked after it, and serves on while old rows break one', async () => {
    const validated = async () =>
      Object.fromEntries(
        (
          await sql<{ conname: string; convalidated: boolean }>`
      select conname, convalidated from pg_constraint where conrelid = 'audit_events'::regclass
         and conname in ('audit_events_actor_type_check', 'audit_events_seq_check')`.execute(t.db)
        ).rows.map((r) => [r.conname, r.convalidated]),
      );
    assert.deepEqual(await validated(), { audit_events_actor_type_check: false, audit_events_seq_check: false }, 'the migration checks no old row');

    const warnings: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });
    const database: DatabaseHandle = { db: t.db, url: t.database.url, ownerUrl: t.database.url, close: async () => {} };
    await prepareDatabase(database, log, () => TEST_SECRETS);
    assert.deepEqual(await validated(), { audit_events_actor_type_check: true, audit_events_seq_check: false }, 'the row below seq 1 of the test before stays');
    assert.deepEqual(warnings, [
      'audit_events holds rows its constraint audit_events_seq_check refuses, inserted outside Plinth: verification reports their chains',
    ]);

    await t.db.transaction().execute(async (trx) => {
      await sql`select set_config('plinth.audit_retention', 'on', true)`.execute(trx);
      await sql`delete from audit_events where seq < 1`.execute(trx);
    });
    await prepareDatabase(database, log, () => TEST_SECRETS);
    assert.deepEqual(await validated(), { audit_events_actor_type_check: true, audit_events_seq_check: true });
  });

  it("retention takes no retention row for a chain's start that the anchored head does not cover, or that shares its seq", async () => {
    const org = await createOrganization(t, 'Cut, with a forged retention row');
    await appendAt(org, new Date(monthStart(new Date(), 20).getTime() + 14 * DAY), 2);
    await appendAt(org, new Date(monthStart(new Date(), 18).getTime() + 14 * DAY), 2);
    await t.call('POST', '/projects', { headers: inOrg(org), body: { data: { givenId: 'now', name: 'Now' } } });
    const rows = await rowsOf(org);
    await deleteAsOperator(org, 'seq <= 2');

    await forgeRetentionRow(org, 6, 2, rows[1].hash, rows[4].hash);
    const beyondHead = await runAuditMaintenance(t.db, TEST_SECRETS, silent);
    assert.ok(beyondHead.leftAlone.includes(org), 'a row past the head vouches for nothing');
    await forgeRetentionRow(org, 5, 2, rows[1].hash, rows[3].hash);
    const sharedSeq = await runAuditMaintenance(t.db, TEST_SECRETS, silent);
    assert.ok(sharedSeq.leftAlone.includes(org), 'a second row at a seq vouches for nothing');
    assert.deepEqual(
      (await rowsOf(org)).map((r) => Number(r.seq)),
      [3, 4, 5, 5, 6],
      'the rows that show the cut are all there',
    );
    const result = await verify(org);
    assert.equal(result.valid, false);
  });

  it("anchors the chains written before anchors while their migration's mark is there, with the key the servers have, and never again", async () => {
    const org = await orgWithRows('Written before anchors', 2);
    await sql`update audit_chain_heads set mac = null where organization_id = ${org}`.execute(t.db);
    const unanchored = await verify(org);
    assert.equal(unanchored.valid, false);
    assert.match(unanchored.reason!, /the anchor does not hold: its chain head has none/);
    const pending = async () => Number((await sql<{ n: string }>`select count(*) as n from audit_anchor_pending`.execute(t.db)).rows[0].n);
    assert.equal(await pending(), 0, 'a database migrated with no chain has nothing to anchor');
    assert.equal(await anchorChainsWrittenBefore(t.db, () => TEST_SECRETS), 0);
    assert.equal((await verify(org)).valid, false, 'without the mark, a head without an anchor stays so');

    // As the migration leaves it for a database with chains.
    await sql`insert into audit_anchor_pending values (true)`.execute(t.db);
    // `plinth migrate` given neither PLINTH_SECRET_KEY nor the data directory: no key made, nothing anchored.
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-no-key-'));
    const database: DatabaseHandle = { db: t.db, url: t.database.url, ownerUrl: t.database.url, close: async () => {} };
    try {
      await assert.rejects(
        prepareDatabase(database, silent, anchorKeyOf({ secretKey: undefined, previousSecretKeys: [], dataDir })),
        /needs the installation's secret key, and none is set/,
      );
      assert.deepEqual(readdirSync(dataDir), [], 'no key file was made');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    // A start that dies before it anchors leaves the mark, and the work, to the next.
    await assert.rejects(
      anchorChainsWrittenBefore(t.db, () => {
        throw new Error('died');
      }),
      /died/,
    );
    assert.equal(await pending(), 1);
    assert.equal((await verify(org)).valid, false);

    await prepareDatabase(database, silent, () => TEST_SECRETS);
    assert.deepEqual(await verify(org), { valid: true, checked: 2 });
    assert.equal(await pending(), 0, 'the mark went with the anchoring');

    await sql`update audit_chain_heads set mac = null where organization_id = ${org}`.execute(t.db);
    await prepareDatabase(database, silent, () => TEST_SECRETS);
    assert.equal((await verify(org)).valid, false, 'once the mark is gone, a head without an anchor is never anchored');
  });

  it('the migration adding anchors marks a database that has chains for anchoring', async () => {
    const admin = new pg.Client({ connectionString: process.env.PLINTH_TEST_DATABASE_URL });
    const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin.connect();
    await admin.query(`create database ${name}`);
    const db = createDb(databaseUrl(process.env.PLINTH_TEST_DATABASE_URL!, name), 2);
    try {
      const dir = path.resolve(import.meta.dirname, '../migrations');
      const before = readdirSync(dir)
        .filter((f) => f.endsWith('.sql') && f < '0015')
        .sort();
      const provider = {
        getMigrations: async () =>
          Object.fromEntries(
            before.map((f): [string, Migration] => [
              f.replace(/\.sql$/, ''),
              { up: async (d) => void (await sql.raw(readFileSync(path.join(dir, f), 'utf8')).execute(d)) },
            ]),
          ),
      };
      const { error } = await new Migrator({ db, provider }).migrateToLatest();
      assert.ifError(error);
      await sql`insert into audit_chain_heads (organization_id, seq, hash) values ('org_before', 0, '')`.execute(db);
      assert.ok((await migrateToLatest(db)).includes('0015_audit_anchor'));
      assert.deepEqual((await sql`select pending from audit_anchor_pending`.execute(db)).rows, [{ pending: true }]);
      await anchorChainsWrittenBefore(db, () => TEST_SECRETS);
      const head = await db.selectFrom('audit_chain_heads').select('mac').where('organization_id', '=', 'org_before').executeTakeFirstOrThrow();
      assert.match(head.mac!, new RegExp(`^${TEST_SECRETS.currentKeyId}:`));
    } finally {
      await db.destroy();
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });

  it('an anchor made with a previous key holds, and maintenance moves it onto the current key', async () => {
    const org = await orgWithRows('Rotated', 2);
    const testKey = Buffer.alloc(32, 7);
    const next = parseSecretKey(generateSecretKeyText(), 'next');
    const rotated = new SecretBox(next, [{ id: keyIdOf(testKey), bytes: testKey }]);
    assert.deepEqual(await verifyAuditChain(t.db, rotated, org), { valid: true, checked: 2 });
    const { reanchored } = await runAuditMaintenance(t.db, rotated, silent);
    assert.ok(reanchored >= 1);
    const head = await t.db.selectFrom('audit_chain_heads').select('mac').where('organization_id', '=', org).executeTakeFirstOrThrow();
    assert.ok(head.mac!.startsWith(`${next.id}:`));
    assert.deepEqual(await verifyAuditChain(t.db, new SecretBox(next), org), { valid: true, checked: 2 }, 'the previous key is no longer needed');
    const withoutKey = await verifyAuditChain(t.db, TEST_SECRETS, org);
    assert.match(withoutKey.reason!, /anchored with a key that is no longer configured/);
  });

  // Last: a direct call applies retention to every organization of this database.
  it('retention called outside the maintenance leaves its record in the chain, which then no longer verifies', async () => {
    const org = await createOrganization(t, 'Retention called directly');
    await appendAt(org, new Date(cutoffOf(31).getTime() - 20 * DAY), 2);
    const patch = await t.call('PATCH', '/audit-settings', { headers: inOrg(org), body: { data: { retentionDays: 31 } } });
    assert.equal(patch.status, 200, JSON.stringify(patch.body));
    assert.deepEqual(await verify(org), { valid: true, checked: 3 });

    await sql`select audit_apply_retention()`.execute(t.db);
    const rows = await rowsOf(org);
    assert.deepEqual(
      rows.map((r) => [Number(r.seq), r.action, r.actor_type]),
      [
        [3, 'audit-setting.update', 'MEMBERSHIP'],
        [4, 'audit.retention', 'SYSTEM'],
      ],
    );
    assert.deepEqual([rows[1].diff.fromSeq, rows[1].diff.toSeq, rows[1].prev_hash], [1, 2, rows[0].hash]);
    const result = await verify(org);
    assert.equal(result.valid, false);
    assert.match(result.reason!, /the anchor does not hold: its chain head was rewritten outside Plinth/);

    await runAuditMaintenance(t.db, TEST_SECRETS, silent);
    assert.equal((await verify(org)).reason, result.reason, 'the maintenance does not vouch for it afterwards');
  });
});
