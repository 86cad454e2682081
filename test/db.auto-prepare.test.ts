import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/platform/config.ts';
import { createDb, type Db } from '../src/platform/db/db.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';

/** Runs `run` on one connection of `db`, then returns the statements that connection holds prepared. */
async function preparedOnConnection(db: Db, run: (conn: Db) => Promise<void>) {
  return db.connection().execute(async (conn) => {
    await run(conn);
    const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'plinth_%'`.execute(conn);
    return rows.map((r) => r.statement);
  });
}

describe('prepared statements for what a connection repeats', () => {
  let database: TestDatabase;
  let db: Db;
  before(async () => {
    database = await createTestDatabase();
    db = createDb(database.url, 1);
    await sql`create table prepare_probe (id int primary key, name text)`.execute(db);
    await sql`insert into prepare_probe values (1, 'one')`.execute(db);
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });

  it('a statement run a third time on a connection is prepared there, and answers the same', async () => {
    const read = (conn: Db) => sql<{ name: string }>`select name from prepare_probe where id = ${1}`.execute(conn);
    const statements = await preparedOnConnection(db, async (conn) => {
      for (let i = 0; i < 2; i++) assert.equal((await read(conn)).rows[0].name, 'one');
      assert.deepEqual(
        await sql`select name from pg_prepared_statements where statement like '%prepare_probe where id%'`.execute(conn).then((r) => r.rows),
        [],
        'not after two runs',
      );
      for (let i = 0; i < 3; i++) assert.equal((await read(conn)).rows[0].name, 'one');
    });
    assert.equal(statements.filter((s) => s.includes('prepare_probe where id')).length, 1);
  });

  it('statements whose text keeps changing never hold more than the bound', async () => {
    const statements = await preparedOnConnection(db, async (conn) => {
      for (let n = 1; n <= 300; n++) {
        const ids = Array.from({ length: n }, (_, i) => i);
        for (let i = 0; i < 3; i++) await sql`select count(*) from prepare_probe where id in (${sql.join(ids)})`.execute(conn);
      }
    });
    assert.ok(statements.length <= 200, `${statements.length} prepared statements on one connection`);
  });

  it('a prepared statement whose result a migration changed fails once, then runs unprepared', async () => {
    const all = (conn: Db) => sql`select * from prepare_probe where id = ${1}`.execute(conn);
    // A pool of its own: the connection above holds as many prepared statements as it may.
    const fresh = createDb(database.url, 1);
    try {
      await fresh.connection().execute(async (conn) => {
        for (let i = 0; i < 4; i++) await all(conn);
        await sql`alter table prepare_probe add column extra text`.execute(conn);
        await assert.rejects(all(conn), (error: { code?: string }) => error.code === '0A000');
        const { rows } = await all(conn);
        assert.deepEqual(Object.keys(rows[0] as object).sort(), ['extra', 'id', 'name']);
      });
    } finally {
      await fresh.destroy();
    }
  });

  it('PLINTH_DB_PREPARE=off prepares nothing; any other value than auto or off is refused at start', async () => {
    assert.equal(loadConfig({}).dbPrepare, true);
    assert.equal(loadConfig({ PLINTH_DB_PREPARE: 'off' }).dbPrepare, false);
    assert.throws(() => loadConfig({ PLINTH_DB_PREPARE: 'yes' }), /PLINTH_DB_PREPARE must be auto or off/);
    const unprepared = createDb(database.url, { max: 1, prepare: false });
    try {
      const statements = await preparedOnConnection(unprepared, async (conn) => {
        for (let i = 0; i < 5; i++) await sql`select name from prepare_probe where id = ${1}`.execute(conn);
      });
      assert.deepEqual(statements, []);
    } finally {
      await unprepared.destroy();
    }
  });
});
