import { sql } from 'kysely';
import type { Db, Trx } from '../platform/db/db.ts';
import type { ErrorBody } from '../platform/schema.ts';
import type { StepConfig } from '../pipelines/pipeline-config.ts';
import { enqueueStepJob, updateExecution, type ExecutionRow, type LockedRunRow, type TransitionRecord } from './engine.repo.ts';
import { advanceRun, createExecution, inTransaction, lockRun, setLocalStatus, stepOf, type LockedRun } from './transition.ts';
import { engineError, nextRetry } from './transitions.ts';

/** What a worker needs to run one claimed step execution. */
export interface ClaimedStep {
  executionId: string;
  run: Omit<LockedRunRow, 'config' | 'execution_environment_type'>;
  step: StepConfig;
  retryAttempt: number;
  /** The execution environment type of the stack's environment; null when none is set (runs as LOCAL). */
  executionEnvironmentType: string | null;
  /** The next log sequence number (an attempt handed back by a draining worker keeps its lines). */
  nextLogSeq: number;
}

/**
 * The execution as of the run's lock: every change to an execution holds that lock, so the list read
 * under it is current. An execution of an older attempt epoch is not there, and is left alone.
 */
function executionIn(locked: LockedRun | undefined, executionId: string): ExecutionRow | undefined {
  return locked?.executions.find((e) => e.id === executionId);
}

/**
 * claimStep moves a QUEUED execution to RUNNING under this worker's lease. Returns undefined when the
 * execution is no longer QUEUED (cancelled, or already claimed through a duplicate job): the job is
 * then a no-op, which is what makes a redispatch safe.
 */
export async function claimStep(db: Db, executionId: string, runId: string, workerId: string, leaseMs: number): Promise<ClaimedStep | undefined> {
  return inTransaction(db, async (trx) => {
    const locked = await lockRun(trx, runId);
    const execution = executionIn(locked, executionId);
    if (!locked || !execution || execution.status !== 'QUEUED') return undefined;
    await updateExecution(
      trx,
      executionId,
      { status: 'RUNNING', leaseOwner: workerId, leaseMs, started: true },
      { runId, from: 'QUEUED', to: 'RUNNING', reason: 'claimed by a worker', actor: workerId },
    );
    setLocalStatus(locked, executionId, 'RUNNING');
    await advanceRun(trx, locked, 'a step started', workerId);
    const { config, execution_environment_type, ...run } = locked.run;
    return {
      executionId,
      run,
      step: stepOf(locked.run, execution.step_id),
      retryAttempt: execution.retry_attempt,
      executionEnvironmentType: execution_environment_type,
      nextLogSeq: execution.last_log_seq + 1,
    };
  });
}

export interface StepOutcome {
  status: 'SUCCEEDED' | 'FAILED';
  error?: ErrorBody;
  outputData?: Record<string, unknown>;
  statusDetail?: Record<string, unknown>;
}

/**
 * failAttempt ends a failed attempt and follows the step's retry policy: another attempt as a new
 * QUEUED execution, or the step's final failure, which fails the run.
 */
async function failAttempt(trx: Trx, locked: LockedRun, executionId: string, reason: string, actor: string) {
  setLocalStatus(locked, executionId, 'FAILED');
  const execution = locked.executions.find((e) => e.id === executionId)!;
  const step = stepOf(locked.run, execution.step_id);
  const retry = nextRetry(step, execution.retry_attempt);
  if (retry) await createExecution(trx, locked, step, 'QUEUED', `retry ${retry.retryAttempt} after: ${reason}`, retry.retryAttempt, actor);
}

/**
 * completeStep records the end of an attempt, if this worker still holds it: a step that was
 * cancelled, or whose lease expired and was failed over, is not this worker's to complete.
 */
export async function completeStep(db: Db, executionId: string, runId: string, workerId: string, outcome: StepOutcome): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const locked = await lockRun(trx, runId);
    const execution = executionIn(locked, executionId);
    if (!locked || !execution || execution.status !== 'RUNNING' || execution.lease_owner !== workerId) return false;
    const reason = outcome.status === 'SUCCEEDED' ? 'the step succeeded' : (outcome.error?.message ?? 'the step failed');
    const changes = {
      status: outcome.status,
      error: outcome.error ?? null,
      outputData: outcome.outputData ?? null,
      statusDetail: outcome.statusDetail ?? null,
      leaseOwner: null,
      leaseMs: null,
      completed: true,
    };
    await updateExecution(trx, executionId, changes, { runId, from: 'RUNNING', to: outcome.status, reason, actor: workerId });
    if (outcome.status === 'FAILED') await failAttempt(trx, locked, executionId, reason, workerId);
    else setLocalStatus(locked, executionId, outcome.status);
    await advanceRun(trx, locked, reason, workerId);
    return true;
  });
}

/**
 * handBackStep returns a RUNNING attempt to the queue when its worker drains (SIGTERM): the process
 * was stopped, the attempt did not fail, so it goes back to QUEUED for any worker to pick up.
 */
export async function handBackStep(db: Db, executionId: string, runId: string, workerId: string): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const execution = executionIn(await lockRun(trx, runId), executionId);
    if (!execution || execution.status !== 'RUNNING' || execution.lease_owner !== workerId) return false;
    const reason = 'handed back by a draining worker';
    await updateExecution(trx, executionId, { status: 'QUEUED', leaseOwner: null, leaseMs: null, started: null }, { runId, from: 'RUNNING', to: 'QUEUED', reason, actor: workerId });
    await enqueueStepJob(trx, executionId, runId);
    return true;
  });
}

/**
 * failLostSteps is the reaper: a RUNNING attempt whose lease expired belongs to a worker that died
 * (or lost the database for longer than the lease). Its attempt fails with Engine:Worker:LOST and
 * follows the retry policy. Each one is its own transaction, re-checked under the run's lock.
 */
export async function failLostSteps(db: Db, reaperId: string, limit = 50): Promise<string[]> {
  const { rows } = await sql<{ id: string; pipeline_run_id: string }>`
    select id, pipeline_run_id from step_executions
     where status = 'RUNNING' and lease_expires_at < now()
     order by lease_expires_at limit ${limit}`.execute(db);
  const failed: string[] = [];
  for (const row of rows) {
    const done = await inTransaction(db, async (trx) => {
      const locked = (await lockRun(trx, row.pipeline_run_id))!;
      const execution = executionIn(locked, row.id);
      if (!execution || execution.status !== 'RUNNING' || !execution.lease_expires_at || execution.lease_expires_at.getTime() > Date.now()) return false;
      const error = engineError('Engine:Worker:LOST', `Worker ${execution.lease_owner} stopped renewing its lease; the attempt is failed over`, {
        workerId: execution.lease_owner,
      });
      const transition: TransitionRecord = { runId: row.pipeline_run_id, from: 'RUNNING', to: 'FAILED', reason: error.message, actor: reaperId };
      await updateExecution(trx, row.id, { status: 'FAILED', error, leaseOwner: null, leaseMs: null, completed: true }, transition);
      await failAttempt(trx, locked, row.id, error.message, reaperId);
      await advanceRun(trx, locked, error.message, reaperId);
      return true;
    });
    if (done) failed.push(row.id);
  }
  return failed;
}

/**
 * redispatchStaleSteps re-adds the job of QUEUED executions dispatched long ago: it covers a worker
 * that died after taking the job but before claiming the step. The job key keeps this idempotent.
 */
export async function redispatchStaleSteps(db: Db, staleMs: number, limit = 50): Promise<number> {
  const { rows } = await sql<{ id: string; pipeline_run_id: string }>`
    select id, pipeline_run_id from step_executions
     where status = 'QUEUED' and dispatched_at < now() - make_interval(secs => ${staleMs / 1000})
     order by dispatched_at limit ${limit}`.execute(db);
  for (const row of rows) await enqueueStepJob(db, row.id, row.pipeline_run_id);
  return rows.length;
}

/** renewLeases extends this worker's leases; returns the executions it still holds (the rest were stopped). */
export async function renewLeases(db: Db, workerId: string, executionIds: string[], leaseMs: number): Promise<Set<string>> {
  if (executionIds.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`
    update step_executions
       set lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}), heartbeat_at = now()
     where id = any(${executionIds}::text[]) and status = 'RUNNING' and lease_owner = ${workerId}
     returning id`.execute(db);
  return new Set(rows.map((r) => r.id));
}
