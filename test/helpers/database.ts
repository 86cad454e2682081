import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { sql, type Kysely } from 'kysely';

/** The server-level URL and migrated template that scripts/test.ts prepared for this run. */
function testEnvironment() {
  const baseUrl = process.env.PLINTH_TEST_DATABASE_URL;
  const template = process.env.PLINTH_TEST_TEMPLATE;
  if (!baseUrl || !template) throw new Error('Run the tests with `npm test`: it prepares the test database server');
  return { baseUrl, template };
}

export function databaseUrl(baseUrl: string, database: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** createTestDatabase clones the migrated template into a database of this test file's own. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const { baseUrl, template } = testEnvironment();
  const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name} template ${template}`);
  } finally {
    await admin.end();
  }
  return {
    url: databaseUrl(baseUrl, name),
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Resolves once `n` sessions of this database wait on a lock (pg_stat_activity): how a test knows that
 * the statement it started is blocked behind the transaction it holds open, whatever the machine's
 * load, instead of sleeping and hoping.
 */
export async function lockWaiters(db: Kysely<any>, n = 1, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
    if (rows[0].n >= n) return;
    if (Date.now() > deadline) throw new Error(`no ${n} session(s) waiting on a lock within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
