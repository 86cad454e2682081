import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely';
import type { Database } from '../db/database.ts';
import { CredentialWriteWatch, writesCredentials } from './credential-writes.ts';

const db = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

describe('credential writes: which statements make the API forget its cached credentials', () => {
  it('an insert, update or delete of a credential table counts, aliased or not', () => {
    assert.ok(
      writesCredentials(
        db
          .insertInto('api_keys')
          .values({ id: 'k' } as never)
          .toOperationNode(),
      ),
    );
    assert.ok(writesCredentials(db.updateTable('memberships as m').set({ role: 'VIEWER' }).where('m.id', '=', 'x').toOperationNode()));
    assert.ok(writesCredentials(db.deleteFrom('organizations').where('id', '=', 'o').toOperationNode()));
    assert.ok(writesCredentials(db.updateTable('users').set({ full_name: 'x' }).toOperationNode()));
    assert.ok(writesCredentials(db.deleteFrom('service_accounts').toOperationNode()));
    assert.ok(writesCredentials(db.updateTable('cloud_accounts').set({ name: 'x' }).toOperationNode()), "a cloud account's ingest secrets are credentials too");
  });

  it('a write inside a CTE counts, and so does raw SQL that writes one', () => {
    const cte = db
      .with('gone', (q) => q.deleteFrom('api_keys').where('id', '=', 'k').returning('id'))
      .selectFrom('gone')
      .selectAll();
    assert.ok(writesCredentials(cte.toOperationNode()));
    assert.ok(writesCredentials(sql`update api_keys set revoked_at = now() where id = ${'k'}`.toOperationNode()));
    assert.ok(writesCredentials(sql`delete from "memberships" where id = ${'m'}`.toOperationNode()));
    assert.ok(writesCredentials(sql`truncate table users`.toOperationNode()));
  });

  it('reads, and writes of other tables (even reading a credential table), do not count', () => {
    assert.ok(!writesCredentials(db.selectFrom('api_keys').selectAll().toOperationNode()));
    assert.ok(
      !writesCredentials(
        db
          .insertInto('projects')
          .values({ id: 'p' } as never)
          .toOperationNode(),
      ),
    );
    assert.ok(!writesCredentials(db.updateTable('stacks').set({ name: 'x' }).where('id', 'in', db.selectFrom('users').select('id')).toOperationNode()));
    assert.ok(!writesCredentials(sql`select * from api_keys k join users u on u.id = k.user_id`.toOperationNode()));
    assert.ok(!writesCredentials(sql`update pipeline_runs set status = 'RUNNING' where created_by_id in (select id from users)`.toOperationNode()));
  });

  it('the watch counts the statements sent through a database it is plugged into', async () => {
    const watch = new CredentialWriteWatch();
    const watched = db.withPlugin(watch);
    await watched.selectFrom('users').selectAll().execute();
    await watched
      .insertInto('projects')
      .values({ id: 'p' } as never)
      .execute();
    assert.equal(watch.writes, 0);
    await watched.transaction().execute((trx) => trx.updateTable('api_keys').set({ name: 'n' }).execute());
    assert.equal(watch.writes, 1);
  });
});
