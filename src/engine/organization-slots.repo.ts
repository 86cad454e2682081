import { sql } from 'kysely';
import type { Db, Executor } from '../platform/db/db.ts';

/** SQL of the organizations' share of worker slots (organization-slots.ts). */

/**
 * lockOrganizationSlots takes, for the rest of the transaction, the lock that orders the claims of
 * the execution's organization, and returns that organization (undefined: no such execution). The
 * running steps it counts next are then the ones every earlier claim of it committed.
 */
export async function lockOrganizationSlots(trx: Executor, executionId: string): Promise<string | undefined> {
  const { rows } = await sql<{ organization_id: string }>`
    select e.organization_id
      from step_executions e, lateral (select pg_advisory_xact_lock(hashtextextended('plinth.organization-steps:' || e.organization_id, 0))) as locked
     where e.id = ${executionId}`.execute(trx);
  return rows[0]?.organization_id;
}

/** How many steps of the organization run now (RUNNING, on any worker). */
export async function countRunningSteps(trx: Executor, organizationId: string): Promise<number> {
  const { rows } = await sql<{ running: number }>`
    select count(*)::int as running from step_executions where status = 'RUNNING' and organization_id = ${organizationId}`.execute(trx);
  return rows[0].running;
}

/** The organizations that run `limit` steps or more. */
export async function findFullOrganizations(db: Db, limit: number): Promise<string[]> {
  const { rows } = await sql<{ organization_id: string }>`
    select organization_id from step_executions where status = 'RUNNING'
     group by organization_id having count(*) >= ${limit}`.execute(db);
  return rows.map((r) => r.organization_id);
}
