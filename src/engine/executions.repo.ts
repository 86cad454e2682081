import { sql, type QueryCreator } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import type { StepStatus } from '../platform/db/enums.ts';
import type { ExecutionSet } from './run-decisions.ts';
import { insertTransition, type TransitionRecord } from './runs.repo.ts';

/** SQL of step executions: their rows, their history rows, their jobs and their leases. */

/** Where a stopped step's id is announced, for the worker running it (worker.ts listens). */
export const STEP_STOP_CHANNEL = 'plinth_step_stop';

/** Wakes the worker running the execution, at commit: it kills the step's process at once. */
export async function notifyStop(trx: Executor, executionId: string): Promise<void> {
  await sql`select pg_notify(${STEP_STOP_CHANNEL}, ${executionId}::text)`.execute(trx);
}
export interface NewExecutionValues {
  id: string;
  organizationId: string;
  runId: string;
  stepId: string;
  stepName: string;
  stepType: string;
  status: StepStatus;
  attemptEpoch: number;
  retryAttempt: number;
  isLastRetry: boolean;
  queueReason: string;
  inputData: Record<string, unknown> | null;
  statusDetail?: Record<string, unknown>;
}

/** A new execution and its first history row. */
export interface NewExecutionRow {
  values: NewExecutionValues;
  transition: TransitionRecord;
}

/**
 * insertExecution creates a step execution and its first history row; a QUEUED one also gets its job,
 * in the same transaction, so a QUEUED execution never exists without one.
 */
export async function insertExecution(trx: Executor, { values: v, transition }: NewExecutionRow): Promise<void> {
  const terminal = v.status === 'SUCCEEDED' || v.status === 'SKIPPED';
  await trx
    .insertInto('step_executions')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      pipeline_run_id: v.runId,
      step_id: v.stepId,
      step_name: v.stepName,
      step_type: v.stepType,
      status: v.status,
      attempt_epoch: v.attemptEpoch,
      retry_attempt: v.retryAttempt,
      is_last_retry: v.isLastRetry,
      queue_reason: v.queueReason,
      input_data: v.inputData === null ? null : JSON.stringify(v.inputData),
      status_detail: v.statusDetail ? JSON.stringify(v.statusDetail) : null,
      completed_at: terminal ? sql<Date>`now()` : null,
    })
    .execute();
  await insertTransition(trx, { ...transition, executionId: v.id });
  if (v.status === 'QUEUED') await enqueueStepJob(trx, v.id, v.runId);
}

/** A change of a step execution: its new status and what the decision sets beside it. */
export type ExecutionChanges = ExecutionSet & { status: StepStatus };

/** The row must still be as the decision saw it: this status, at this lease epoch. */
export interface ExecutionGuard {
  status: StepStatus;
  leaseEpoch: number;
}

/** The guarded update of an execution (its history row is the caller's: locked-run.ts). */
export function executionUpdate(db: QueryCreator<Database>, id: string, c: ExecutionChanges, guard: ExecutionGuard) {
  const lease =
    c.lease === undefined
      ? {}
      : c.lease === null
        ? { lease_owner: null, lease_expires_at: null }
        : {
            lease_owner: c.lease.owner,
            lease_epoch: sql<number>`lease_epoch + 1`,
            lease_expires_at: sql<Date>`now() + make_interval(secs => ${c.lease.ms / 1000})`,
            heartbeat_at: sql<Date>`now()`,
            // The claim takes a worker slot of the organization's (organization-slots.ts).
            slot_held_until: sql<Date>`now() + make_interval(secs => ${c.lease.ms / 1000})`,
          };
  return db
    .updateTable('step_executions')
    .set({
      updated_at: sql<Date>`now()`,
      status: c.status,
      ...(c.error !== undefined ? { error: c.error === null ? null : JSON.stringify(c.error) } : {}),
      ...(c.outputData !== undefined ? { output_data: c.outputData === null ? null : JSON.stringify(c.outputData) } : {}),
      ...(c.statusDetail !== undefined ? { status_detail: c.statusDetail === null ? null : JSON.stringify(c.statusDetail) } : {}),
      ...lease,
      ...(c.started === true ? { started_at: sql<Date>`now()` } : c.started === null ? { started_at: null } : {}),
      ...(c.completed ? { completed_at: sql<Date>`now()` } : {}),
    })
    .where('id', '=', id)
    .where('status', '=', guard.status)
    .where('lease_epoch', '=', guard.leaseEpoch);
}

/**
 * The graphile-worker flag of every step job of an organization: a worker does not take the jobs of an
 * organization whose steps hold all its worker slots (organization-slots.ts).
 */
export const ORGANIZATION_FLAG_PREFIX = 'org:';

/**
 * The graphile-worker job of a QUEUED execution, as a row (execution_id, id), in the caller's
 * transaction, so a job exists exactly when its QUEUED step does. The job key (`step:<id>`, kept run_at) makes a redispatch replace a waiting job instead of adding one,
 * and (graphile-worker's rule) add a fresh job when the old one is locked: by a worker that died before
 * it claimed the step, or by the worker deferring its claim. The fresh job keeps the old one's run_at,
 * its place in the queue (unless that lies ahead: a job that failed for good was put off by
 * graphile-worker's backoff), and carries its organization's flag. The execution's row is locked first, as
 * a command holding it locks it before the job, and an execution no longer QUEUED gets no job.
 */
function stepJobs(jobs: readonly { executionId: string; runId: string }[]) {
  return sql<{ execution_id: string; id: string }>`
    select substr(j.key, 6) as execution_id, j.id::text as id
      from graphile_worker.add_jobs(
             array(select row('step.execute', json_build_object('stepExecutionId', x.id, 'runId', x.run), null,
                              least((select old.run_at from graphile_worker.jobs old where old.key = 'step:' || x.id), now()), 5::smallint, 'step:' || x.id, null,
                              array[${ORGANIZATION_FLAG_PREFIX} || e.organization_id])::graphile_worker.job_spec
                     from unnest(${jobs.map((j) => j.executionId)}::text[], ${jobs.map((j) => j.runId)}::text[]) as x(id, run)
                     join step_executions e on e.id = x.id and e.status = 'QUEUED'
                      for no key update of e),
             job_key_preserve_run_at => true) as j`;
}

/** enqueueStepJob dispatches an existing QUEUED execution again (redispatch, hand-back, a deferred claim) and records the job. */
export async function enqueueStepJob(trx: Executor, executionId: string, runId: string): Promise<void> {
  await sql`
    with job as (${stepJobs([{ executionId, runId }])})
    update step_executions set engine_job_id = job.id, dispatched_at = now() from job
     where step_executions.id = ${executionId} and step_executions.status = 'QUEUED'`.execute(trx);
}

/**
 * renewLeases extends the leases a worker holds at the epochs it claimed, with their worker slots;
 * returns the ids it still holds. The rows are locked in id order, the order commands lock a run's
 * executions in, so a heartbeat and a command never deadlock. The slots of the attempts it no longer
 * holds but whose processes it is still stopping (cancelled ones) are renewed apart, skipping a row a
 * command has locked: a command may hold one while it waits for a row of this worker's (a retried run
 * admitted behind a finishing one reads every execution of its earlier attempts), and the next
 * heartbeat renews what this one skipped.
 */
export async function renewLeases(db: Db, workerId: string, held: { id: string; leaseEpoch: number }[], leaseMs: number): Promise<Set<string>> {
  if (held.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`
    with locked as (
      select e.id from step_executions e
        join unnest(${held.map((h) => h.id)}::text[], ${held.map((h) => h.leaseEpoch)}::int[]) as h(id, epoch) on e.id = h.id and e.lease_epoch = h.epoch
       where e.status = 'RUNNING' and e.lease_owner = ${workerId}
       order by e.id
         for no key update of e)
    update step_executions e
       set lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}), heartbeat_at = now(),
           slot_held_until = case when e.slot_held_until is not null then now() + make_interval(secs => ${leaseMs / 1000}) end
      from locked
     where e.id = locked.id
     returning e.id`.execute(db);
  const leased = new Set(rows.map((r) => r.id));
  const stopping = held.filter((h) => !leased.has(h.id));
  if (stopping.length > 0) {
    await sql`
      update step_executions e set slot_held_until = now() + make_interval(secs => ${leaseMs / 1000})
       where e.id in (
         select s.id from step_executions s
           join unnest(${stopping.map((h) => h.id)}::text[], ${stopping.map((h) => h.leaseEpoch)}::int[]) as h(id, epoch) on s.id = h.id and s.lease_epoch = h.epoch
          where s.slot_held_until is not null
          order by s.id
            for no key update of s skip locked)`.execute(db);
  }
  return leased;
}

/**
 * clearLapsedSlots forgets the worker slots that lapsed more than `graceMs` ago: their workers died or
 * lost the database, and have stopped their processes since (docs/engine.md#organizations-share-the-workers).
 */
export async function clearLapsedSlots(db: Db, graceMs: number): Promise<void> {
  await sql`
    update step_executions set slot_held_until = null
     where slot_held_until is not null and slot_held_until < now() - make_interval(secs => ${graceMs / 1000})`.execute(db);
}

export interface ExecutionRef {
  id: string;
  pipeline_run_id: string;
}

/** A QUEUED execution to dispatch again, with what the log line of its redispatch names. */
export interface StaleDispatch extends ExecutionRef {
  organization_id: string;
  step_id: string;
  step_name: string;
}

/** RUNNING executions whose lease ran out by the database's clock. */
export async function findExpiredLeases(db: Db, limit: number): Promise<ExecutionRef[]> {
  const { rows } = await sql<ExecutionRef>`
    select id, pipeline_run_id from step_executions
     where status = 'RUNNING' and lease_expires_at < now()
     order by lease_expires_at limit ${limit}`.execute(db);
  return rows;
}

/**
 * QUEUED executions dispatched longer ago than `staleMs` whose job cannot run them: the job is gone
 * (failed for good, or removed), or a worker took it that long ago and never claimed the step (it
 * died in between). A job merely waiting for a free worker is left alone.
 */
export async function findStaleDispatches(db: Db, staleMs: number, limit: number): Promise<StaleDispatch[]> {
  const { rows } = await sql<StaleDispatch>`
    select e.id, e.pipeline_run_id, e.organization_id, e.step_id, e.step_name from step_executions e
      left join graphile_worker.jobs j on j.id::text = e.engine_job_id
     where e.status = 'QUEUED' and e.dispatched_at < now() - make_interval(secs => ${staleMs / 1000})
       and (j.id is null or j.locked_at < now() - make_interval(secs => ${staleMs / 1000}) or j.attempts >= j.max_attempts)
     order by e.dispatched_at limit ${limit}`.execute(db);
  return rows;
}
