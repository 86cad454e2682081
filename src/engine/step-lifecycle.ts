import type { Db } from '../platform/db/db.ts';
import { isRetryableDbError, withRetries, type RetryOptions } from '../platform/db/retry.ts';
import { metrics } from '../platform/metrics/metrics.ts';
import type { StepConfig } from '../pipelines/pipeline-config.ts';
import { enqueueStepJob, findExpiredLeases, findStaleDispatches, renewLeases } from './executions.repo.ts';
import { StaleWriteError, withLockedRun } from './locked-run.ts';
import { decideClaim, decideComplete, decideHandBack, decideReap, stepOf, type HeldAttempt, type StepOutcome } from './run-decisions.ts';
import type { LockedRunRow } from './runs.repo.ts';
import type { LogTail } from './log-sink.ts';
import { tellRedispatched } from './run-story.ts';

export type { HeldAttempt, StepOutcome } from './run-decisions.ts';

/**
 * What a worker does to a step execution: claim, complete, hand back; and what every worker does
 * for all of them: renew its leases, reap the attempts of dead workers, redispatch lost jobs. Every
 * one of these retries through transient database faults (a deadlock, a dropped connection, the
 * server restarting): a write that failed was rolled back, and each is safe to run again.
 */

/** What a worker needs to run one claimed step execution. */
export interface ClaimedStep {
  executionId: string;
  /** The fencing token of this worker's lease on the attempt. */
  leaseEpoch: number;
  run: Omit<LockedRunRow, 'config' | 'execution_environment_type' | 'execution_environment_egress_allow' | 'executions'>;
  step: StepConfig;
  retryAttempt: number;
  /** The execution environment type of the stack's environment; null when none is set (runs as LOCAL). */
  executionEnvironmentType: string | null;
  /** The execution environment's egress allowlist, which narrows the installation's for this step; null: none. */
  egressAllow: string[] | null;
  /** The next log sequence number (an attempt handed back by a draining worker keeps its lines). */
  nextLogSeq: number;
}

/** A guarded write that found its row changed is decided again on a fresh read, like a deadlock. */
const retryable = (e: unknown) => e instanceof StaleWriteError || isRetryableDbError(e);

export interface ClaimWorker {
  id: string;
  leaseMs: number;
}

/**
 * claimStep moves a QUEUED execution to RUNNING under this worker's lease and a new lease epoch, under
 * the run's lock as every command does. Undefined when it is no longer QUEUED (cancelled, claimed
 * through a duplicate job): the job is then a no-op, which makes a redispatch safe. A try whose commit
 * went unacknowledged is decided again and recognizes its own lease (mayAdopt), so a claim is neither
 * doubled nor lost to a fault.
 */
export async function claimStep(db: Db, executionId: string, runId: string, worker: ClaimWorker, retry: RetryOptions = {}): Promise<ClaimedStep | undefined> {
  const claimOnce = (mayAdopt: boolean) =>
    db.transaction().execute((trx) =>
      withLockedRun<ClaimedStep | undefined>(
        trx,
        runId,
        (s, ctx, row) => {
          const d = decideClaim(s, executionId, { id: worker.id, leaseMs: worker.leaseMs, mayAdopt }, ctx);
          if (d.result.kind !== 'claimed') return { writes: [], result: undefined };
          const { config, execution_environment_type, execution_environment_egress_allow, executions, ...run } = row;
          const claimed: ClaimedStep = {
            executionId,
            leaseEpoch: d.result.leaseEpoch,
            run,
            step: stepOf(s, d.result.stepId),
            retryAttempt: d.result.retryAttempt,
            executionEnvironmentType: execution_environment_type,
            egressAllow: execution_environment_egress_allow,
            nextLogSeq: (executions.find((e) => e.id === executionId)?.last_log_seq ?? 0) + 1,
          };
          return { writes: d.writes, result: claimed };
        },
        { actor: worker.id },
      ),
    );
  return withRetries((attempt) => claimOnce(attempt > 1), { ...retry, isRetryable: retryable });
}

/**
 * completeStep records the end of an attempt, and the last lines of its log (`tail`), if this worker
 * still holds it at its lease epoch (the lines are written either way, as a flush would be). A
 * step that was cancelled, or failed over after its lease ran out, is not this worker's to complete
 * (false). It retries until the outcome is committed or `retry.signal` says the lease is lost.
 */
export async function completeStep(db: Db, held: HeldAttempt, runId: string, outcome: StepOutcome, retry: RetryOptions = {}, tail?: LogTail): Promise<boolean> {
  const done = await withRetries(
    () =>
      // The step's last log lines are written by the outcome's own statement, whatever the decision
      // (idempotent: a retry writes them again as nothing).
      db
        .transaction()
        .execute((trx) => withLockedRun(trx, runId, (s, ctx) => decideComplete(s, held, outcome, ctx), { actor: held.workerId, alongside: tail?.insert })),
    { maxElapsedMs: Number.POSITIVE_INFINITY, ...retry, isRetryable: retryable },
  );
  return done ?? false;
}

/**
 * handBackStep returns a RUNNING attempt to the queue when its worker drains (SIGTERM): the process
 * was stopped, the attempt did not fail, so it goes back to QUEUED (a new job) for any worker.
 */
export async function handBackStep(db: Db, held: HeldAttempt, runId: string, retry: RetryOptions = {}): Promise<boolean> {
  const done = await withRetries(() => db.transaction().execute((trx) => withLockedRun(trx, runId, (s) => decideHandBack(s, held), { actor: held.workerId })), {
    ...retry,
    isRetryable: retryable,
  });
  return done ?? false;
}

/**
 * reapLostSteps fails every RUNNING attempt whose lease ran out (its worker died, or lost the
 * database for longer than the lease) with Engine:Worker:LOST; each follows its retry policy. Each
 * is its own transaction, decided again under the run's lock, so two reapers or a late completion
 * cannot both act.
 */
export async function reapLostSteps(db: Db, reaperId: string, retry: RetryOptions = {}, limit = 50): Promise<string[]> {
  const expired = await withRetries(() => findExpiredLeases(db, limit), retry);
  const reaped: string[] = [];
  for (const row of expired) {
    const done = await withRetries(
      () => db.transaction().execute((trx) => withLockedRun(trx, row.pipeline_run_id, (s, ctx) => decideReap(s, row.id, ctx), { actor: reaperId })),
      { ...retry, isRetryable: retryable },
    );
    if (done) {
      reaped.push(row.id);
      metrics.leaseExpiries.inc();
    }
  }
  return reaped;
}

/**
 * redispatchStaleSteps dispatches again the QUEUED executions whose job cannot run them any more (a
 * worker took it and died before claiming; it failed for good). The job key and the claim's QUEUED
 * check make this idempotent: a duplicate job finds nothing to do.
 */
export async function redispatchStaleSteps(db: Db, staleMs: number, retry: RetryOptions = {}, limit = 50): Promise<number> {
  const stale = await withRetries(() => findStaleDispatches(db, staleMs, limit), retry);
  for (const row of stale) {
    await withRetries(() => enqueueStepJob(db, row.id, row.pipeline_run_id), retry);
    tellRedispatched(row);
  }
  return stale.length;
}

/** renewHeldLeases extends this worker's leases; returns the executions it still holds (the rest were taken from it). */
export function renewHeldLeases(
  db: Db,
  workerId: string,
  held: { id: string; leaseEpoch: number }[],
  leaseMs: number,
  retry: RetryOptions = {},
): Promise<Set<string>> {
  return withRetries(() => renewLeases(db, workerId, held, leaseMs), retry);
}
