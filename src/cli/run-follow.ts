// Following a run: the logs of each step as it runs (approval steps have none), until the run ends or
// waits for a person, riding out API restarts; and what a failed run has to say for itself.

import { PlinthApiError, PlinthTimeoutError, TERMINAL_RUN_STATUSES, type LogLine, type PipelineRun, type Plinth, type StepExecution } from '@plinth/sdk';
import { all } from './command-kit.ts';
import { terminalLines, terminalSafe, useColour } from './output.ts';
import { Reconnector } from './reconnect.ts';
import type { Session } from './session.ts';

/** The step executions of a run, every page. */
export function stepsOfRun(plinth: Plinth, runId: string): Promise<StepExecution[]> {
  return all(plinth.paginate('/pipeline-runs/{id}/step-executions', { path: { id: runId }, query: { limit: 200 } }));
}

/** Where a waiting command stops: the run ended, or a person must act. */
const OUTCOME_STATUSES: readonly PipelineRun['status'][] = [...TERMINAL_RUN_STATUSES, 'WAITING_FOR_APPROVAL'];
const POLL_MS = 500;

function reconnector(s: Session): Reconnector {
  return new Reconnector(s.settings.host, (line) => s.out.info(line));
}

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** waitOutcome reads the run until it ends or waits for approval (PlinthTimeoutError after timeoutMs). */
export async function waitOutcome(s: Session, runId: string, timeoutMs?: number): Promise<PipelineRun> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
  const link = reconnector(s);
  for (;;) {
    const run = await link.call(() => s.plinth.runs.get(runId));
    if (OUTCOME_STATUSES.includes(run.status)) return run;
    if (Date.now() >= deadline) throw new PlinthTimeoutError(`run ${runId} is still ${run.status}`);
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
  }
}

/**
 * printLine writes one log line: as text with its step's name in a table, and as one JSON object per
 * line otherwise (on stderr then, since stdout carries the run document at the end).
 */
export function printLine(s: Session, step: StepExecution, line: LogLine, stream: NodeJS.WriteStream) {
  if (s.out.human) stream.write(`${s.out.paint(`[${terminalSafe(step.stepId)}]`, 'blue', stream)} ${terminalSafe(line.line, useColour(stream))}\n`);
  else stream.write(`${JSON.stringify({ stepId: step.stepId, stepExecutionId: step.id, ...line })}\n`);
}

/** Steps with output to stream: started (or done) and not an approval. */
function streamable(step: StepExecution): boolean {
  return step.stepType !== 'approval' && step.status !== 'QUEUED' && step.status !== 'SKIPPED';
}

/** An answer of the API (a 404, a 403) will not change by asking again; anything else is the connection's. */
function isApiAnswer(error: unknown): boolean {
  return error instanceof PlinthApiError && error.status < 500;
}

/** followStep prints one step's lines as they are written, resuming after the last line printed when the stream breaks. */
async function followStep(s: Session, link: Reconnector, step: StepExecution, stream: NodeJS.WriteStream, deadline: number) {
  let after = 0;
  for (;;) {
    const signal = AbortSignal.timeout(Math.max(1, Math.min(2 ** 31 - 1, deadline - Date.now())));
    try {
      for await (const line of s.plinth.logs.follow(step.id, { after, signal, maxReconnects: 0 })) {
        printLine(s, step, line, stream);
        after = line.seq;
      }
      return;
    } catch (error) {
      if (signal.aborted || isApiAnswer(error)) throw error;
      // The stream broke (an API restart, a proxy's idle cut): wait for the API to answer again, then resume.
      link.lost(error);
      await link.call(() => s.plinth.runs.get(step.pipelineRunId));
    }
  }
}

/**
 * followRun streams the logs of every step of the run as it starts, one step at a time (steps that ran
 * in parallel follow one another), and returns the run once it has ended or waits for approval with
 * every started step's output printed (of `stepId` only, when given). The run is read before its steps,
 * so a final status seen means the step list read after it is final too.
 */
export async function followRun(s: Session, runId: string, timeoutMs?: number, stepId?: string): Promise<PipelineRun> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
  const stream = s.out.human ? s.out.stdout : s.out.stderr;
  const link = reconnector(s);
  const done = new Set<string>();
  for (;;) {
    const run = await link.call(() => s.plinth.runs.get(runId));
    const steps = await link.call(() => stepsOfRun(s.plinth, runId));
    const pending = steps.filter((e) => streamable(e) && !done.has(e.id) && (stepId === undefined || e.stepId === stepId));
    for (const step of pending) {
      await followStep(s, link, step, stream, deadline);
      done.add(step.id);
    }
    if (pending.length === 0 && OUTCOME_STATUSES.includes(run.status)) return run;
    if (Date.now() >= deadline) throw new PlinthTimeoutError(`run ${runId} is still ${run.status}`);
    if (pending.length === 0) await sleep(POLL_MS);
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
export async function explainFailure(s: Session, run: PipelineRun, stream: NodeJS.WriteStream, tail = FAILED_TAIL_LINES): Promise<void> {
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
    const lines = (await unwrapTail(s, step.id, tail)).map((line) => `${terminalSafe(line.line, useColour(stream))}`);
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

async function unwrapTail(s: Session, executionId: string, tail: number): Promise<LogLine[]> {
  const answer = await s.plinth.api.GET('/pipeline-step-executions/{id}/logs', { params: { path: { id: executionId }, query: { tail } } });
  return answer.data?.data ?? [];
}
