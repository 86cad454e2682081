// Following a whole run: the log of each step as it starts, one step after another, until the run ends
// or waits for a person, riding out restarts of the API.

import { PlinthApiError } from './errors.js';
import { followLogs } from './logs.js';
import { Outage, type ReconnectOptions } from './reconnect.js';
import { sleep } from './retry.js';
import { TERMINAL_RUN_STATUSES, type LogLine, type PipelineRun, type RunStatus, type StepExecution } from './types.js';

/** Where following a run stops: it ended, or a person must approve. */
export const OUTCOME_RUN_STATUSES: readonly RunStatus[] = [...TERMINAL_RUN_STATUSES, 'WAITING_FOR_APPROVAL'];

/** A log line of a run, with the step execution that wrote it (as read when its log was opened). */
export interface RunLogLine extends LogLine {
  step: StepExecution;
}

export interface FollowRunOptions extends ReconnectOptions {
  /** Follow only the executions of this step (its retries included). */
  stepId?: string;
  /** Step executions not to follow: those a previous followLogs of the run already yielded (`line.step.id`). */
  skipExecutions?: Iterable<string>;
  /** Time between two reads of the run while no step has a log to follow (default 500 ms). */
  intervalMs?: number;
}

/** What followRunLogs reads through: the client's calls. */
export interface RunReader {
  run(id: string): Promise<PipelineRun>;
  steps(runId: string): Promise<StepExecution[]>;
  send: Parameters<typeof followLogs>[0];
}

/** Steps with a log to follow: started (or done) and not an approval. */
function hasLog(step: StepExecution): boolean {
  return step.stepType !== 'approval' && step.status !== 'QUEUED' && step.status !== 'SKIPPED';
}

/**
 * followRunLogs yields the lines of every step execution of the run, a step's lines in order and one
 * step after another in the order the run created them (steps that ran in parallel follow one another),
 * and returns the run once it has ended or waits for approval with every started step's lines yielded.
 * The run is read before its steps, so a final status seen means the step list read after it is final.
 * The log of a plan, which a caller without `state:read` (a VIEWER) may not read, is skipped.
 */
export async function* followRunLogs(read: RunReader, runId: string, options: FollowRunOptions = {}): AsyncGenerator<RunLogLine, PipelineRun> {
  const outage = new Outage(options);
  const followed = new Set<string>(options.skipExecutions);
  for (;;) {
    const run = await outage.call(() => read.run(runId));
    const steps = await outage.call(() => read.steps(runId));
    const pending = steps.filter((s) => hasLog(s) && !followed.has(s.id) && (options.stepId === undefined || s.stepId === options.stepId));
    for (const step of pending) {
      try {
        for await (const line of followLogs(read.send, step.id, options)) yield { ...line, step };
      } catch (error) {
        // A plan's log shows the stack's values: a caller who may not read state (a VIEWER) skips it.
        if (!(error instanceof PlinthApiError && error.code === 'Auth:Permission:DENIED')) throw error;
      }
      followed.add(step.id);
    }
    if (pending.length === 0 && OUTCOME_RUN_STATUSES.includes(run.status)) return run;
    if (pending.length === 0) await sleep(options.intervalMs ?? 500, options.signal);
  }
}
