import { Logger as QueueLogger, run, runMigrations, type Runner, type Task } from 'graphile-worker';
import type { Logger } from '../platform/logger.ts';
import { withRetries } from '../platform/db/retry.ts';

/**
 * The job catalogue: one job kind, `step.execute`, whose payload names a QUEUED step execution.
 * Runs themselves are never jobs: their state lives in our tables and advances in transactions, so
 * an approval waits without holding a worker and a job is only ever "go run this attempt".
 */
export const STEP_EXECUTE = 'step.execute';
export interface StepExecutePayload {
  stepExecutionId: string;
  runId: string;
}

export function parseStepExecutePayload(payload: unknown): StepExecutePayload {
  const p = (payload ?? {}) as { stepExecutionId?: unknown; runId?: unknown };
  if (typeof p.stepExecutionId !== 'string' || typeof p.runId !== 'string') throw new Error(`malformed step.execute payload: ${JSON.stringify(payload)}`);
  return { stepExecutionId: p.stepExecutionId, runId: p.runId };
}

function queueLogger(log: Logger): QueueLogger {
  return new QueueLogger((scope) => (level, message, meta) => {
    const fields = { queue: 'graphile-worker', ...scope, ...(meta ?? {}) };
    if (level === 'error') log.error(fields, message);
    else if (level === 'warning') log.warn(fields, message);
    else log.debug(fields, message);
  });
}

/**
 * installQueue creates or upgrades graphile-worker's own schema (`graphile_worker`). Every process
 * calls it at start, API ones included: a stack run is enqueued inside the API's transaction.
 */
export async function installQueue(connectionString: string, log: Logger): Promise<void> {
  // noHandleSignals: graphile-worker would otherwise install process-wide signal handlers that re-raise SIGTERM.
  await runMigrations({ connectionString, logger: queueLogger(log), noHandleSignals: true });
}

export interface QueueOptions {
  connectionString: string;
  concurrency: number;
  pollMs: number;
  log: Logger;
  executeStep: (payload: StepExecutePayload) => Promise<void>;
}

export interface Queue {
  stop(): Promise<void>;
}

/**
 * graphile-worker 0.17 settings that let a worker ride out a database outage. Without batching, a
 * job's completeJob/failJob is a promise nobody awaits (worker.js), so ECONNREFUSED while the
 * database restarts is an unhandled rejection that ends the process; the batched path retries it with
 * backoff instead and reports a final failure as a pool error.
 *
 * A job's completion is batched over COMPLETE_JOB_BATCH_MS: it is nobody's wait (the step's outcome,
 * and the jobs of the steps it unblocks, were committed before), and when steps end close together it
 * deletes their jobs in one statement instead of one each. A worker that dies inside that window leaves
 * those jobs locked; should graphile-worker run one again, its claim finds the step ended and does
 * nothing, as for a worker that died after its commit without the window. Failures stay unbatched.
 */
const COMPLETE_JOB_BATCH_MS = 20;
const OUTAGE_SAFE_PRESET = { worker: { completeJobBatchDelay: COMPLETE_JOB_BATCH_MS, failJobBatchDelay: 0 } };

/**
 * startQueue runs graphile-worker's pool; signals are ours to handle (the worker drains on SIGTERM).
 * Should the pool give up (its retries of a job's release ran out during a long outage), it is
 * started again: jobs it held are redispatched by the reaper, and no step loses its state.
 */
export async function startQueue(o: QueueOptions): Promise<Queue> {
  const task: Task = async (payload) => o.executeStep(parseStepExecutePayload(payload));
  let stopping = false;
  let runner: Runner | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  const launch = async (): Promise<void> => {
    runner = await run({
      connectionString: o.connectionString,
      concurrency: o.concurrency,
      maxPoolSize: o.concurrency + 2,
      pollInterval: o.pollMs,
      noHandleSignals: true,
      logger: queueLogger(o.log),
      preset: OUTAGE_SAFE_PRESET,
      taskList: { [STEP_EXECUTE]: task },
    });
    const current = runner;
    current.promise.then(
      () => !stopping && restart(new Error('the job queue stopped')),
      (error: unknown) => !stopping && restart(error),
    );
    function restart(error: unknown) {
      if (runner !== current) return;
      o.log.error({ err: error }, 'the job queue stopped; starting it again');
      const again = () => {
        if (stopping) return;
        launch().catch((e: unknown) => {
          o.log.warn({ err: e }, 'could not start the job queue; trying again');
          restartTimer = setTimeout(again, 2_000);
        });
      };
      restartTimer = setTimeout(again, 1_000);
    }
  };
  // A database restarting or failing over while the worker starts is waited out (a minute at most).
  await withRetries(launch, { onRetry: (err) => o.log.warn({ err }, 'the job queue cannot start yet; retrying') });
  return {
    stop: async () => {
      stopping = true;
      clearTimeout(restartTimer);
      await runner?.stop().catch((error: unknown) => o.log.warn({ err: error }, 'the job queue stopped with an error'));
    },
  };
}
