// Following a run: the logs of each step as it runs (approval steps have none), until the run ends or
// waits for a person, riding out API restarts; and what a failed run has to say for itself.

import { OUTCOME_RUN_STATUSES, Outage, PlinthTimeoutError, unwrap, type LogLine, type PipelineRun, type Plinth, type StepExecution } from '@plinth/sdk';
import { terminalLines, terminalSafe, useColour } from './output.ts';
import { reconnectOptions } from './reconnect.ts';
import type { Session } from './session.ts';
import type { TextOut } from './stdio.ts';

/** The step executions of a run, every page. */
export function stepsOfRun(plinth: Plinth, runId: string): Promise<StepExecution[]> {
  return plinth.runs.steps(runId);
}

const POLL_MS = 500;

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** waitOutcome reads the run until it ends or waits for approval (PlinthTimeoutError after timeoutMs). */
export async function waitOutcome(s: Session, runId: string, timeoutMs?: number): Promise<PipelineRun> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
  // The time limit holds during an outage too: the retries stop when it runs out.
  const signal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
  const link = new Outage(reconnectOptions(s, signal));
  let last = 'not read yet';
  try {
    for (;;) {
      const run = await link.call(() => s.plinth.runs.get(runId));
      last = run.status;
      if (OUTCOME_RUN_STATUSES.includes(run.status)) return run;
      if (Date.now() >= deadline) break;
      await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
    }
  } catch (error) {
    if (!signal?.aborted) throw error;
  }
  throw new PlinthTimeoutError(`run ${runId} is still ${last}`);
}

/**
 * printLine writes one log line: as text with its step's name in a table, and as one JSON object per
 * line otherwise (on stderr then, since stdout carries the run document at the end).
 */
export function printLine(s: Session, step: StepExecution, line: LogLine, stream: TextOut) {
  if (s.out.human) stream.write(`${s.out.paint(`[${terminalSafe(step.stepId)}]`, 'blue', stream)} ${terminalSafe(line.line, useColour(stream))}\n`);
  else stream.write(`${JSON.stringify({ stepId: step.stepId, stepExecutionId: step.id, ...line })}\n`);
}

/**
 * followRun prints the logs of every step of the run as it starts (of `stepId` only, when given),
 * through the SDK's followLogs, and returns the run once it has ended or waits for approval. An outage
 * of the API is ridden out for five minutes, said on stderr.
 */
export async function followRun(s: Session, runId: string, timeoutMs?: number, stepId?: string): Promise<PipelineRun> {
  const stream = s.out.human ? s.out.stdout : s.out.stderr;
  const signal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
  const lines = s.plinth.runs.followLogs(runId, { ...reconnectOptions(s, signal), ...(stepId === undefined ? {} : { stepId }) });
  try {
    for (;;) {
      const next = await lines.next();
      if (next.done) return next.value;
      const { step, ...line } = next.value;
      printLine(s, step, line, stream);
    }
  } catch (error) {
    if (signal?.aborted) throw new PlinthTimeoutError(`run ${runId} did not end within ${timeoutMs} ms`);
    throw error;
  }
}

export const FAILED_TAIL_LINES = 20;

/** The step executions that failed in the run's latest attempt (a retried run keeps its earlier ones). */
export function failedSteps(run: PipelineRun, steps: StepExecution[]): StepExecution[] {
  return steps.filter((e) => e.status === 'FAILED' && e.attemptEpoch === run.attemptEpoch);
}

interface StepError {
  code?: string;
  message?: string;
  details?: { items?: string[] }[];
}

/**
 * explainFailure writes why a run failed: each failed step with its error code and message, then its
 * last lines of output. What a run can say without a failed step (cancelled, an engine error) is its own
 * error.
 */
export async function explainFailure(s: Session, run: PipelineRun, stream: TextOut, tail = FAILED_TAIL_LINES): Promise<void> {
  const failed = failedSteps(run, await stepsOfRun(s.plinth, run.id));
  const say = (text: string) => stream.write(`${text}\n`);
  if (failed.length === 0) {
    const error = run.error as StepError | undefined;
    if (error?.message) say(`run ${run.id} ${run.status}: ${terminalLines(error.message)}${error.code ? ` (${error.code})` : ''}`);
    return;
  }
  for (const step of failed) {
    const error = (step.error ?? {}) as StepError;
    const items = (error.details ?? []).flatMap((d) => d.items ?? []);
    say(s.out.paint(`step "${terminalSafe(step.stepId)}" (${terminalSafe(step.stepType)}) failed${error.code ? `: ${error.code}` : ''}`, 'red', stream));
    if (error.message) say(indent(terminalLines(error.message)));
    for (const item of items) say(indent(terminalLines(item)));
    const lines = (await stepLines(s, step, tail)).map((line) => terminalSafe(line.line, useColour(stream)));
    if (lines.length) {
      say(s.out.paint(`last ${lines.length} line${lines.length === 1 ? '' : 's'} of "${terminalSafe(step.stepId)}":`, 'dim', stream));
      for (const line of lines) say(indent(line));
    }
  }
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

/** A step's stored lines: every one, or the last `tail`. */
export async function stepLines(s: Session, step: StepExecution, tail?: number): Promise<LogLine[]> {
  if (tail !== undefined) {
    return (await unwrap(s.plinth.api.GET('/pipeline-step-executions/{id}/logs', { params: { path: { id: step.id }, query: { tail } } }))).data;
  }
  const lines: LogLine[] = [];
  for await (const line of s.plinth.logs.lines(step.id)) lines.push(line);
  return lines;
}
