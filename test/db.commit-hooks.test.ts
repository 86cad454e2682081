import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { afterCommit } from '../src/platform/db/commit-hooks.ts';
import { createDb, type Db } from '../src/platform/db/db.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';

describe('commit hooks', () => {
  let database: TestDatabase;
  let db: Db;
  before(async () => {
    database = await createTestDatabase();
    db = createDb(database.url, 2);
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });

  it('runs an after-commit callback once its transaction commits, and never for one rolled back (a retry counts once)', async () => {
    const seen: string[] = [];
    await db.transaction().execute(async (trx) => {
      await trx.executeQuery(afterCommit(() => seen.push('committed')));
      assert.deepEqual(seen, [], 'not before the commit');
    });
    assert.deepEqual(seen, ['committed']);

    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await trx.executeQuery(afterCommit(() => seen.push('rolled back')));
        await sql`select 1 / 0`.execute(trx);
      }),
    );
    assert.deepEqual(seen, ['committed']);

    await db.executeQuery(afterCommit(() => seen.push('no transaction')));
    assert.deepEqual(seen, ['committed', 'no transaction'], 'outside a transaction there is nothing to wait for');
  });
});
