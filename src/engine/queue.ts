import { Logger as QueueLogger, run, runMigrations, type Runner, type Task } from 'graphile-worker';
import type { Logger } from '../platform/logger.ts';

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

/** startQueue runs graphile-worker's pool; signals are ours to handle (the worker drains on SIGTERM). */
export function startQueue(o: QueueOptions): Promise<Runner> {
  const task: Task = async (payload) => o.executeStep(parseStepExecutePayload(payload));
  return run({
    connectionString: o.connectionString,
    concurrency: o.concurrency,
    maxPoolSize: o.concurrency + 2,
    pollInterval: o.pollMs,
    noHandleSignals: true,
    logger: queueLogger(o.log),
    taskList: { [STEP_EXECUTE]: task },
  });
}
