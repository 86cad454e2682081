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
 * Ranks stop here: a step whose organization has this many other unfinished steps or more competes
 * first come, first served with the steps of other organizations that have as many. A rank is set
 * when its job is added and never after (rewriting waiting jobs would hide them from the workers'
 * fetch while it runs), so a job's rank may be higher than its organization's count has since
 * become, by at most this much.
 */
export const MAX_STEP_RANK = 8;

/**
 * enqueueStepJob adds the graphile-worker job of a QUEUED execution (new, redispatched or handed back)
 * and records it on the execution, in the caller's transaction, so a job exists exactly when its
 * QUEUED step does. The job key (`step:<id>`, kept run_at) makes a redispatch replace a waiting job
 * instead of adding one, and (graphile-worker's rule) add a fresh job when the old one is locked by a
 * worker that died before it claimed the step.
 *
 * The job's priority is its rank: how many other steps its organization runs or has waiting, up to
 * MAX_STEP_RANK. graphile-worker takes the lowest priority first (the oldest among equals), so an
 * organization with few unfinished steps has its next one run before the backlog of one with many,
 * and no slot idles while any step waits.
 */
export async function enqueueStepJob(trx: Executor, executionId: string, runId: string): Promise<void> {
  await sql`
    with rank as (
      select count(*)::smallint as n from (
        select 1 from step_executions e
          join step_executions o on o.organization_id = e.organization_id and o.status in ('QUEUED', 'RUNNING') and o.id <> e.id
         where e.id = ${executionId}
         limit ${MAX_STEP_RANK}) unfinished),
    job as (
      select j.id::text as id
        from graphile_worker.add_jobs(
               array[row('step.execute', json_build_object('stepExecutionId', ${executionId}::text, 'runId', ${runId}::text), null, null, 5::smallint,
                         ${`step:${executionId}`}::text, (select n from rank), null)::graphile_worker.job_spec],
               job_key_preserve_run_at => true) as j)
    update step_executions set engine_job_id = job.id, dispatched_at = now() from job
     where step_executions.id = ${executionId} and step_executions.status = 'QUEUED'`.execute(trx);
}

/**
 * renewLeases extends the leases a worker holds at the epochs it claimed; returns the ids it still
 * holds. The rows are locked in id order, the order commands lock a run's executions in, so a
 * heartbeat and a command never deadlock.
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
       set lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}), heartbeat_at = now()
      from locked
     where e.id = locked.id
     returning e.id`.execute(db);
  return new Set(rows.map((r) => r.id));
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
