import pg from 'pg';
import { Kysely, PostgresDialect, type Dialect, type Transaction } from 'kysely';
import { autoPrepare } from './auto-prepare.ts';
import { HookedDriver } from './commit-hooks.ts';
import type { Database } from './database.ts';

export type Db = Kysely<Database>;
export type Trx = Transaction<Database>;
/** Either the pool or an open transaction: repository functions take it explicitly. */
export type Executor = Db | Trx;

// Return timestamps as Date (default) but int8 as number: our counters stay far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));

const pools = new WeakMap<Db, pg.Pool>();

export interface DbOptions {
  /** Connections in the pool. */
  max?: number;
  /** Prepare the statements each connection repeats (auto-prepare.ts); off behind a pooler that cannot keep them. */
  prepare?: boolean;
}

/** A statement is prepared at its third run on a connection; at most 200 per connection. */
const AUTO_PREPARE = { after: 3, max: 200 };

export function createDb(connectionString: string, options: DbOptions | number = {}): Db {
  const { max = 10, prepare = true } = typeof options === 'number' ? { max: options } : options;
  const pool = new pg.Pool({ connectionString, max });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it on next use.
  });
  // A checked-out client has no listener of the pool's: a connection lost between two statements would
  // otherwise be an uncaught 'error' that ends the process. The next query on it fails instead.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    if (prepare) autoPrepare(client, AUTO_PREPARE);
  });
  const postgres = new PostgresDialect({ pool });
  // Every transaction runs the commit hooks (commit-hooks.ts): the audit row, metrics counted after commit.
  const dialect: Dialect = {
    createAdapter: () => postgres.createAdapter(),
    createDriver: () => new HookedDriver(postgres.createDriver()),
    createIntrospector: (db) => postgres.createIntrospector(db),
    createQueryCompiler: () => postgres.createQueryCompiler(),
  };
  const db = new Kysely<Database>({ dialect });
  pools.set(db, pool);
  return db;
}

/**
 * The pg pool under a Db made by createDb, for the few queries that need what Kysely does not offer:
 * a named (server-side prepared) statement on the hot path of every request.
 */
export function poolOf(db: Db): pg.Pool | undefined {
  return pools.get(db);
}
