// Following a run: the logs of each step as it runs (approval steps have none), until the run ends or
// waits for a person.

import { PlinthTimeoutError, TERMINAL_RUN_STATUSES, type LogLine, type PipelineRun, type Plinth, type StepExecution } from '@plinth/sdk';
import { all } from './command-kit.ts';
import { terminalSafe, useColour } from './output.ts';
import type { Session } from './session.ts';

/** The step executions of a run, every page. */
export function stepsOfRun(plinth: Plinth, runId: string): Promise<StepExecution[]> {
  return all(plinth.paginate('/pipeline-runs/{id}/step-executions', { path: { id: runId }, query: { limit: 200 } }));
}

/** Where a waiting command stops: the run ended, or a person must act. */
const OUTCOME_STATUSES: readonly PipelineRun['status'][] = [...TERMINAL_RUN_STATUSES, 'WAITING_FOR_APPROVAL'];
const POLL_MS = 500;

/** waitOutcome reads the run until it ends or waits for approval (PlinthTimeoutError after timeoutMs). */
export function waitOutcome(plinth: Plinth, runId: string, timeoutMs?: number): Promise<PipelineRun> {
  return plinth.runs.wait(runId, { until: OUTCOME_STATUSES, timeoutMs, intervalMs: POLL_MS });
}

/**
 * printLine writes one log line: as text with its step's name in a table, and as one JSON object per
 * line otherwise (on stderr then, since stdout carries the run document at the end).
 */
export function printLine(s: Session, step: StepExecution, line: LogLine, stream: NodeJS.WriteStream) {
  if (s.out.format === 'table')
    stream.write(`${s.out.paint(`[${terminalSafe(step.stepId)}]`, 'blue', stream)} ${terminalSafe(line.line, useColour(stream))}\n`);
  else stream.write(`${JSON.stringify({ stepId: step.stepId, stepExecutionId: step.id, ...line })}\n`);
}

/** Steps with output to stream: started (or done) and not an approval. */
function streamable(step: StepExecution): boolean {
  return step.stepType !== 'approval' && step.status !== 'QUEUED' && step.status !== 'SKIPPED';
}

/**
 * followRun streams the logs of every step of the run as it starts, one step at a time (steps that ran
 * in parallel follow one another), and returns the run once it has ended or waits for approval with
 * every started step's output printed (of `stepId` only, when given). The run is read before its steps, so a final status seen means
 * the step list read after it is final too.
 */
export async function followRun(s: Session, runId: string, timeoutMs?: number, stepId?: string): Promise<PipelineRun> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
  const stream = s.out.format === 'table' ? s.out.stdout : s.out.stderr;
  const done = new Set<string>();
  for (;;) {
    const run = await s.plinth.runs.get(runId);
    const pending = (await stepsOfRun(s.plinth, runId)).filter((e) => streamable(e) && !done.has(e.id) && (stepId === undefined || e.stepId === stepId));
    for (const step of pending) {
      for await (const line of s.plinth.logs.follow(step.id, { signal: AbortSignal.timeout(Math.max(1, Math.min(2 ** 31 - 1, deadline - Date.now()))) })) {
        printLine(s, step, line, stream);
      }
      done.add(step.id);
    }
    if (pending.length === 0 && OUTCOME_STATUSES.includes(run.status)) return run;
    if (Date.now() >= deadline) throw new PlinthTimeoutError(`run ${runId} is still ${run.status}`);
    if (pending.length === 0) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
