import { afterCommit } from '../platform/db/commit-hooks.ts';
import type { Executor } from '../platform/db/db.ts';
import type { Logger } from '../platform/logger.ts';
import { stepOf, type RunSnapshot, type RunWrite } from './run-decisions.ts';
import { isTerminalRun } from './run-state.ts';
import type { LockedRunRow } from './runs.repo.ts';

/**
 * The story of each run in the server's log, at info: one line per run and step transition, written
 * once (and only if) the transaction that made it commits, so a transition rolled back or retried after
 * a fault is never told as done. Lines are decided from the same writes the engine commits
 * (locked-run.ts), so no transition is told from a second place. Their fields: docs/operations.md#logging.
 */
export interface StoryLine {
  /** `run.started`, `step.failed`, …: stable, for filtering. */
  event: string;
  msg: string;
  fields: Record<string, unknown>;
}

let storyLog: Logger | undefined;

/** tellRunStoriesTo sets where this process tells run stories (once, at start); undefined: nowhere. */
export function tellRunStoriesTo(log: Logger | undefined): void {
  storyLog = log;
}

function tell(line: StoryLine): void {
  storyLog?.info({ event: line.event, ...line.fields }, line.msg);
}

/**
 * tellAfterCommit tells the line `lineOf` makes once the transaction `ex` commits (at once outside a
 * transaction). The line is made now, from the state as this write sees it, and only when a logger is set.
 */
export async function tellAfterCommit(ex: Executor, lineOf: () => StoryLine | undefined): Promise<void> {
  if (!storyLog) return;
  let line: StoryLine | undefined;
  try {
    line = lineOf();
  } catch (error) {
    // A log line must never fail the transition it tells of.
    storyLog.warn({ err: error }, 'could not make the log line of a run transition');
  }
  if (line) await ex.executeQuery(afterCommit(() => tell(line)));
}

type RunFields = Pick<LockedRunRow, 'id' | 'organization_id' | 'stack_id' | 'attempt_epoch'>;

function runFields(run: RunFields): Record<string, unknown> {
  return {
    organizationId: run.organization_id,
    stackId: run.stack_id ?? undefined,
    runId: run.id,
    attemptEpoch: run.attempt_epoch,
  };
}

/** A run just triggered: queued, and waiting for `blockingRunId` when its stack is busy. */
export function runQueuedLine(run: RunFields & { action: string | null }, actor: string | undefined, blockingRunId: string | undefined): StoryLine {
  return {
    event: 'run.queued',
    msg: blockingRunId ? 'run queued behind the active run of its stack' : 'run queued',
    fields: { ...runFields(run), action: run.action ?? undefined, actor, blockingRunId },
  };
}

/** The line of one write of a command, decided on `s` as it was before the write; undefined: none. */
export function storyLineOf(row: LockedRunRow, s: RunSnapshot, w: RunWrite, actor: string | undefined): StoryLine | undefined {
  const run = { ...runFields(row), attemptEpoch: s.attemptEpoch };
  switch (w.kind) {
    case 'run':
      return w.status ? runLine(run, w.status.from, w.status.to, w.status.reason, w.set.error?.code, actor) : undefined;
    case 'newExecution': {
      const step = stepFields(s, w.stepId, w.id, w.retryAttempt);
      return newStepLine({ ...run, ...step }, w.status, w.reason);
    }
    case 'execution': {
      const e = s.executions.find((x) => x.id === w.id);
      if (!e) return undefined;
      const step = { ...run, ...stepFields(s, e.stepId, e.id, e.retryAttempt) };
      return stepLine(step, w, e.leaseOwner, actor);
    }
    default:
      return undefined;
  }
}

function stepFields(s: RunSnapshot, stepId: string, executionId: string, retryAttempt: number): Record<string, unknown> {
  const step = stepOf(s, stepId);
  return { stepExecutionId: executionId, stepId, stepName: step.name, stepType: step.type, retryAttempt };
}

function runLine(fields: Record<string, unknown>, from: string, to: string, reason: string, errorCode: string | undefined, actor?: string): StoryLine {
  if (isTerminalRun(to)) return { event: 'run.finished', msg: `run finished: ${to}`, fields: { ...fields, outcome: to, errorCode, actor } };
  if (to === 'QUEUED') return { event: 'run.queued', msg: 'run queued', fields: { ...fields, reason, actor } };
  if (to === 'WAITING_FOR_APPROVAL') return { event: 'run.waiting_for_approval', msg: 'run waiting for approval', fields };
  if (from === 'QUEUED') return { event: 'run.started', msg: 'run started', fields };
  return { event: 'run.resumed', msg: 'run running again', fields: { ...fields, reason } };
}

function newStepLine(fields: Record<string, unknown>, status: string, reason: string): StoryLine {
  switch (status) {
    case 'WAITING_FOR_APPROVAL':
      return { event: 'step.waiting_for_approval', msg: 'step waiting for approval', fields };
    case 'SUCCEEDED':
      return { event: 'step.approved', msg: 'step approved', fields: { ...fields, approvedBy: 'autoapprove' } };
    case 'SKIPPED':
      return { event: 'step.skipped', msg: 'step skipped', fields: { ...fields, reason } };
    default:
      return { event: 'step.queued', msg: Number(fields.retryAttempt) > 0 ? 'step queued for a retry' : 'step queued', fields: { ...fields, reason } };
  }
}

function stepLine(fields: Record<string, unknown>, w: Extract<RunWrite, { kind: 'execution' }>, leaseOwner: string | null, actor?: string): StoryLine {
  const { to, reason } = w.status;
  const errorCode = w.set.error?.code;
  if (to === 'RUNNING') return { event: 'step.started', msg: 'step started', fields: { ...fields, workerId: w.set.lease?.owner } };
  if (to === 'QUEUED') return { event: 'step.handed_back', msg: 'step handed back by a draining worker', fields: { ...fields, workerId: leaseOwner } };
  if (to === 'CANCELLED') return { event: 'step.cancelled', msg: 'step cancelled', fields: { ...fields, reason, actor } };
  if (w.status.from === 'WAITING_FOR_APPROVAL')
    return to === 'SUCCEEDED'
      ? { event: 'step.approved', msg: 'step approved', fields: { ...fields, approvedBy: actor } }
      : { event: 'step.rejected', msg: 'step rejected', fields: { ...fields, rejectedBy: actor, errorCode } };
  if (to === 'SUCCEEDED') return { event: 'step.finished', msg: 'step finished', fields: { ...fields, outcome: to, workerId: leaseOwner } };
  if (errorCode === 'Engine:Worker:LOST')
    return { event: 'step.lease_lost', msg: 'step failed over: its worker stopped renewing the lease', fields: { ...fields, workerId: leaseOwner, errorCode } };
  return { event: 'step.failed', msg: 'step failed', fields: { ...fields, outcome: to, workerId: leaseOwner, errorCode } };
}

/** A QUEUED step whose job was lost, dispatched again (not a transition: told once the job is added). */
export function tellRedispatched(step: { id: string; pipeline_run_id: string; organization_id: string; step_id: string; step_name: string }): void {
  tell({
    event: 'step.redispatched',
    msg: 'step redispatched: its job was lost',
    fields: { organizationId: step.organization_id, runId: step.pipeline_run_id, stepExecutionId: step.id, stepId: step.step_id, stepName: step.step_name },
  });
}
