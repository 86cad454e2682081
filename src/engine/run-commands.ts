import type { Selectable } from 'kysely';
import type { PipelineRunsTable } from '../platform/db/database.ts';
import type { Trx } from '../platform/db/db.ts';
import { NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { admitTriggeredRun, withLockedRun, type Decide } from './locked-run.ts';
import { decideApprove, decideCancel, decideReject, decideRetry } from './run-decisions.ts';
import { runQueuedLine, tellAfterCommit } from './run-story.ts';
import { insertRun, type InsertedRun, type NewRunValues, type TransitionRecord } from './runs.repo.ts';
import { findBusyStack } from './stack-queue.repo.ts';

/**
 * The commands callers give the engine (trigger, approve, reject, cancel, retry). Each runs inside
 * the caller's transaction as one withLockedRun, and refuses an illegal move with a typed error.
 */
export type NewRun = Omit<NewRunValues, 'id' | 'blockingStackId'>;

export interface TriggeredRun {
  id: string;
  /** The run's row as this transaction left it (nobody else has seen it yet). */
  row: Selectable<PipelineRunsTable>;
  /** Its stack's active run: the run itself when it got the stack; null without a stack. */
  stackActiveRunId: string | null;
}

/**
 * triggerRun inserts a QUEUED run, records it as its stack's latest, and admits it when the stack is
 * free; otherwise it waits its turn. The caller holds the stack's row lock.
 */
export async function triggerRun(trx: Trx, v: NewRun): Promise<TriggeredRun> {
  const id = newId();
  const actor = v.createdById ?? undefined;
  // A run that waits for other stacks takes its own only once they are idle (stack-queue.repo.ts).
  const blockingStackId = v.waitForStackIds?.length ? ((await findBusyStack(trx, v.waitForStackIds)) ?? null) : null;
  const inserted = await insertRun(trx, { id, ...v, blockingStackId }, triggered(id, actor));
  const blockingRunId = v.stackId && inserted.stackActiveRunId !== id ? (inserted.stackActiveRunId ?? undefined) : undefined;
  await tellAfterCommit(trx, () => runQueuedLine(inserted.run, actor, blockingRunId));
  return admitIfFree(trx, id, v.stackId, inserted, actor);
}

function triggered(runId: string, actor: string | undefined): TransitionRecord {
  return { runId, from: null, to: 'QUEUED', reason: 'triggered', actor };
}

async function admitIfFree(trx: Trx, id: string, stackId: string | null, inserted: InsertedRun, actor: string | undefined): Promise<TriggeredRun> {
  const { run, stackActiveRunId } = inserted;
  const admitted = !stackId || stackActiveRunId === id ? await admitTriggeredRun(trx, run, actor) : undefined;
  return { id, row: admitted ?? run, stackActiveRunId };
}

async function command(trx: Trx, runId: string, actor: string, decide: Decide<void>): Promise<void> {
  const found = await withLockedRun(trx, runId, (s, ctx, row) => ({ ...decide(s, ctx, row), result: true }), { actor });
  if (!found) throw new NotFoundError('PipelineRun', runId);
}

/** approveStep lets a run go on past an approval step; a second approval gets 409. */
export function approveStep(trx: Trx, runId: string, executionId: string, actor: string): Promise<void> {
  return command(trx, runId, actor, (s, ctx) => decideApprove(s, executionId, new Date().toISOString(), ctx));
}

/** rejectStep fails the approval step, and with it the run (approvals are never retried). */
export function rejectStep(trx: Trx, runId: string, executionId: string, actor: string): Promise<void> {
  return command(trx, runId, actor, (s, ctx) => decideReject(s, executionId, new Date().toISOString(), ctx));
}

/**
 * cancelRun ends a run that is not finished: its queued, running and waiting steps are cancelled (a
 * running step's worker is notified and kills the process), steps not reached never start, and the
 * stack goes to the next waiting run.
 */
export function cancelRun(trx: Trx, runId: string, actor: string): Promise<void> {
  return command(trx, runId, actor, (s, ctx) => decideCancel(s, ctx));
}

/**
 * retryRun starts a finished, unsuccessful run again as a new attempt epoch: every step runs afresh
 * (a plan is never applied from a stale attempt), in the stack's queue like a new run.
 */
export function retryRun(trx: Trx, runId: string, actor: string): Promise<void> {
  return command(trx, runId, actor, (s) => decideRetry(s));
}
