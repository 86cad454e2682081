import { sql } from 'kysely';
import type { Executor } from './db.ts';

/** The tables whose rows fall due for background work, and the column each says when in. */
export type DueColumn =
  | ['domains', 'next_check_at']
  | ['certificate_issuances', 'next_check_at']
  | ['deployments', 'definition_check_at']
  | ['deployments', 'service_check_at']
  | ['deployment_resources', 'target_check_at'];

/**
 * claimDue takes one row whose due time has come, for this worker alone: in the same statement its
 * due time is moved `leaseSeconds` on, so another worker takes it only should this one die before it
 * sets the next. Rows locked by another worker's claim are passed over, not waited for. `where` narrows
 * which rows may be taken (a domain still pending, say). The lease is whole milliseconds, as a
 * JavaScript Date holds it, so that a worker can tell whether its claim still stands.
 */
export async function claimDue<Row>(db: Executor, [table, column]: DueColumn, leaseSeconds: number, where = sql<boolean>`true`): Promise<Row | undefined> {
  const { rows } = await sql<Row>`
    update ${sql.table(table)} set ${sql.ref(column)} = date_trunc('milliseconds', now() + make_interval(secs => ${leaseSeconds}))
    where id = (
      select id from ${sql.table(table)}
      where ${sql.ref(column)} <= now() and ${where}
      order by ${sql.ref(column)}
      limit 1
      for update skip locked
    )
    returning *`.execute(db);
  return rows[0];
}
