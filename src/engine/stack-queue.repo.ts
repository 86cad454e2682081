import { sql, type Selectable } from 'kysely';
import type { StacksTable } from '../platform/db/database.ts';
import type { Trx } from '../platform/db/db.ts';

/** SQL of the stack queue: a stack's one admitted run (`active_run_id`) and the runs waiting for it. */
export type StackLockRow = Pick<Selectable<StacksTable>, 'id' | 'active_run_id'>;

export function lockStack(trx: Trx, stackId: string): Promise<StackLockRow | undefined> {
  return trx.selectFrom('stacks').select(['id', 'active_run_id']).where('id', '=', stackId).forUpdate().executeTakeFirst();
}

/**
 * claimStackForRun makes the run the stack's active run when the stack has none, and returns the
 * stack's active run afterwards: the run itself when it got the stack. The UPDATE's row lock
 * serializes it with releaseStack. (A triggered run's claim is part of its insert: insertRun.)
 */
export async function claimStackForRun(trx: Trx, stackId: string, runId: string): Promise<string | null> {
  const row = await trx
    .updateTable('stacks')
    .set({ active_run_id: sql<string>`coalesce(active_run_id, ${runId})`, updated_at: sql<Date>`now()` })
    .where('id', '=', stackId)
    .returning('active_run_id')
    .executeTakeFirst();
  return row?.active_run_id ?? null;
}

/**
 * passStackToNextWaitingRun makes the stack's oldest waiting run (FIFO by time-ordered id) its active
 * run, or leaves it free; returns that run. The caller holds the stack's row lock, taken by a statement
 * of its own: this statement's snapshot, taken after it, sees every run triggered before the lock.
 */
export async function passStackToNextWaitingRun(trx: Trx, stackId: string): Promise<string | undefined> {
  const row = await trx
    .with('next', (db) =>
      db
        .selectFrom('pipeline_runs')
        .select('id')
        .where('stack_id', '=', stackId)
        .where('status', '=', 'QUEUED')
        .where('admitted_at', 'is', null)
        .where('blocking_stack_id', 'is', null)
        .orderBy('id')
        .limit(1)
        .forUpdate(),
    )
    .updateTable('stacks')
    .set({ active_run_id: (eb) => eb.selectFrom('next').select('id'), updated_at: sql<Date>`now()` })
    .where('id', '=', stackId)
    .returning('active_run_id')
    .executeTakeFirst();
  return row?.active_run_id ?? undefined;
}

/**
 * findBusyStack share-locks the stacks (in id order) and answers the first with a run that is not
 * finished: an admitted one, or one still waiting (in its stack's queue, or itself for other stacks).
 * The lock keeps that run's release from committing before the caller does: the release then sees the
 * caller's run waiting for the stack, and lets it go on.
 */
export async function findBusyStack(trx: Trx, stackIds: readonly string[]): Promise<string | undefined> {
  if (stackIds.length === 0) return undefined;
  const rows = await trx
    .selectFrom('stacks as s')
    .select([
      's.id',
      's.active_run_id',
      (eb) =>
        eb
          .exists(
            eb
              .selectFrom('pipeline_runs as r')
              .select('r.id')
              .whereRef('r.stack_id', '=', 's.id')
              .where('r.status', '=', 'QUEUED')
              .where('r.admitted_at', 'is', null),
          )
          .as('has_waiting'),
    ])
    .where('s.id', 'in', [...stackIds])
    .orderBy('s.id')
    .forShare('s')
    .execute();
  return rows.find((r) => r.active_run_id !== null || r.has_waiting)?.id;
}

/** The runs waiting for a stack to be idle, locked in id order. */
export function lockRunsWaitingFor(trx: Trx, stackId: string) {
  return trx
    .selectFrom('pipeline_runs')
    .select(['id', 'stack_id', 'wait_for_stack_ids'])
    .where('blocking_stack_id', '=', stackId)
    .where('status', '=', 'QUEUED')
    .where('admitted_at', 'is', null)
    .orderBy('id')
    .forUpdate()
    .execute();
}

export async function setBlockingStack(trx: Trx, runId: string, stackId: string | null): Promise<void> {
  await trx.updateTable('pipeline_runs').set({ blocking_stack_id: stackId }).where('id', '=', runId).execute();
}
