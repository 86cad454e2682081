import type { Trx } from '../platform/db/db.ts';
import { NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { insertRun, lockExecution, updateExecution, updateRun, type RunChanges } from './engine.repo.ts';
import { advanceRun, enterStackQueue, finishExecution, lockRun, releaseStack, setLocalStatus } from './transition.ts';
import { assertAwaitingApproval, assertCancellable, assertRetryable, engineError, isTerminalStep, type RunAction } from './transitions.ts';

/**
 * The commands callers give the engine (trigger, approve, reject, cancel, retry). Each runs inside
 * the caller's transaction, under the run's row lock, and refuses an illegal move with a typed error.
 */
export interface NewRun {
  organizationId: string;
  pipelineId: string;
  pipelineVersionId: string;
  stackId: string | null;
  action: RunAction | null;
  autoapprove: boolean;
  description: string;
  input: Record<string, unknown> | null;
  createdById: string | null;
}

/**
 * triggerRun inserts a QUEUED run, records it as its stack's latest, and admits it when the stack is
 * free; otherwise it waits its turn.
 */
export async function triggerRun(trx: Trx, v: NewRun): Promise<string> {
  const id = newId();
  const actor = v.createdById ?? undefined;
  await insertRun(trx, { id, ...v }, { runId: id, from: null, to: 'QUEUED', reason: 'triggered', actor });
  await enterStackQueue(trx, id, v.stackId, actor, true);
  return id;
}

async function lockWaitingExecution(trx: Trx, runId: string, executionId: string) {
  const locked = await lockRun(trx, runId);
  const execution = await lockExecution(trx, executionId);
  if (!locked || !execution) throw new NotFoundError('StepExecution', executionId);
  assertAwaitingApproval(execution.status, executionId);
  return locked;
}

/** approveStep lets a run go on past an approval step; a second approval gets 409. */
export async function approveStep(trx: Trx, runId: string, executionId: string, actor: string): Promise<void> {
  const locked = await lockWaitingExecution(trx, runId, executionId);
  await updateExecution(trx, executionId, {
    status: 'SUCCEEDED',
    statusDetail: { approval: 'APPROVED', approvedBy: actor, decidedAt: new Date().toISOString() },
    completed: true,
  }, { runId, from: 'WAITING_FOR_APPROVAL', to: 'SUCCEEDED', reason: 'approved', actor });
  setLocalStatus(locked, executionId, 'SUCCEEDED');
  await advanceRun(trx, locked, 'a step was approved', actor);
}

/** rejectStep fails the approval step, and with it the run (approvals are never retried). */
export async function rejectStep(trx: Trx, runId: string, executionId: string, actor: string): Promise<void> {
  const locked = await lockWaitingExecution(trx, runId, executionId);
  await updateExecution(trx, executionId, {
    status: 'FAILED',
    statusDetail: { approval: 'REJECTED', rejectedBy: actor, decidedAt: new Date().toISOString() },
    error: engineError('Engine:Approval:REJECTED', `Rejected by ${actor}`, { rejectedBy: actor }),
    completed: true,
  }, { runId, from: 'WAITING_FOR_APPROVAL', to: 'FAILED', reason: 'rejected', actor });
  setLocalStatus(locked, executionId, 'FAILED');
  await advanceRun(trx, locked, 'a step was rejected', actor);
}

/**
 * cancelRun ends a run that is not finished: its queued, running and waiting steps are cancelled (a
 * running step's worker is notified and kills the process), steps not reached never start, and the
 * stack goes to the next waiting run.
 */
export async function cancelRun(trx: Trx, runId: string, actor: string): Promise<void> {
  const locked = await lockRun(trx, runId);
  if (!locked) throw new NotFoundError('PipelineRun', runId);
  const { run, executions } = locked;
  assertCancellable(run.status, runId);
  for (const e of executions) if (!isTerminalStep(e.status)) await finishExecution(trx, runId, e, 'CANCELLED', 'the run was cancelled', actor);
  const error = engineError('Engine:Run:CANCELLED', `Cancelled by ${actor}`);
  await updateRun(trx, runId, { status: 'CANCELLED', completed: true, error }, { runId, from: run.status, to: 'CANCELLED', reason: 'cancelled', actor });
  if (run.stack_id && run.admitted_at) await releaseStack(trx, run.stack_id, runId);
}

/**
 * retryRun starts a finished, unsuccessful run again as a new attempt epoch: every step runs afresh
 * (a plan is never applied from a stale attempt), in the stack's queue like a new run.
 */
export async function retryRun(trx: Trx, runId: string, actor: string): Promise<void> {
  const locked = await lockRun(trx, runId);
  if (!locked) throw new NotFoundError('PipelineRun', runId);
  const { run } = locked;
  assertRetryable(run.status, runId);
  const epoch = run.attempt_epoch + 1;
  const changes: RunChanges = { status: 'QUEUED', attemptEpoch: epoch, admitted: false, started: false, completed: null, error: null };
  await updateRun(trx, runId, changes, { runId, from: run.status, to: 'QUEUED', reason: `retried as attempt ${epoch}`, actor });
  await enterStackQueue(trx, runId, run.stack_id, actor);
}
