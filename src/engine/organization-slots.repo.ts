import { sql } from 'kysely';
import type { Db, Executor } from '../platform/db/db.ts';

/** SQL of the worker slots each organization's steps hold (organization-slots.ts). */

/**
 * lockRunOfClaim takes the run's lock as readRun does, first, as every command does, and returns its
 * organization (undefined: no such run).
 */
export async function lockRunOfClaim(trx: Executor, runId: string): Promise<string | undefined> {
  const { rows } = await sql<{ organization_id: string }>`
    select organization_id from pipeline_runs where id = ${runId} for no key update`.execute(trx);
  return rows[0]?.organization_id;
}

/**
 * countHeldSlots takes, for the rest of the transaction, the lock that orders the organization's
 * claims, then counts the slots its steps hold. The count is a statement of its own, after the lock:
 * it sees every earlier claim of the organization committed.
 */
export async function countHeldSlots(trx: Executor, organizationId: string): Promise<number> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`plinth.organization-slots:${organizationId}`}, 0))`.execute(trx);
  const { rows } = await sql<{ held: number }>`
    select count(*)::int as held from step_executions
     where organization_id = ${organizationId} and slot_held_until > now()`.execute(trx);
  return rows[0].held;
}

/** The organizations whose steps hold `limit` slots or more. */
export async function findFullOrganizations(db: Db, limit: number): Promise<string[]> {
  const { rows } = await sql<{ organization_id: string }>`
    select organization_id from step_executions where slot_held_until > now()
     group by organization_id having count(*) >= ${limit}`.execute(db);
  return rows.map((r) => r.organization_id);
}

/**
 * The statement that gives back the slot of an attempt, once its process has ended: the attempt at the
 * lease epoch of its claim (a later claim of the same execution holds a slot of its own).
 */
export function slotRelease(executionId: string, leaseEpoch: number) {
  return sql`
    update step_executions set slot_held_until = null
     where id = ${executionId} and lease_epoch = ${leaseEpoch} and slot_held_until is not null`;
}
