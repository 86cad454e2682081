import type { Trx } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import { observeAfterCommit } from './engine-metrics.ts';
import { enqueueStepJob, insertExecutions, notifyStepStopped, updateExecution, type NewExecutionValues } from './executions.repo.ts';
import { applyWrites, decideAdmit, stepOf, type DecideContext, type Decision, type RunSnapshot, type RunWrite } from './run-decisions.ts';
import { isLastAttempt, type RunAction, type RunStatus, type StepStatus } from './run-state.ts';
import { readRun, readRunStatus, updateRun, type LockedRunRow, type TransitionRecord } from './runs.repo.ts';
import { claimStackForRun, findNextWaitingRunId, lockStack, setStackActiveRun } from './stack-queue.repo.ts';

/**
 * The one shape of every change to a run: lock the run row, read it and its executions, let a pure
 * decision (run-decisions.ts) say what to write, write it, in the caller's transaction. Concurrent
 * approvals, cancels, completions and reapers of one run queue on the lock, and each decides on
 * what the previous one committed. A claim reads without the lock (`lock: 'none'`): its own write
 * is guarded, so parallel steps of one run claim side by side.
 */
export type Decide<R> = (snapshot: RunSnapshot, ctx: DecideContext, row: LockedRunRow) => Decision<R>;

/** A guarded write found its row changed under it: only possible for a claim read without the lock. */
export class StaleWriteError extends Error {
  constructor(id: string) {
    super(`${id} changed between the read and the write`);
  }
}

function snapshotOf(row: LockedRunRow): RunSnapshot {
  const current = row.executions.filter((e) => e.attempt_epoch === row.attempt_epoch);
  return {
    id: row.id,
    organizationId: row.organization_id,
    status: row.status as RunStatus,
    started: row.last_attempt_started_at !== null,
    admitted: row.admitted_at !== null,
    action: row.action as RunAction | null,
    autoapprove: row.autoapprove,
    attemptEpoch: row.attempt_epoch,
    stackId: row.stack_id,
    input: row.input,
    steps: row.config.steps,
    executions: current.map((e) => ({
      id: e.id,
      stepId: e.step_id,
      status: e.status as StepStatus,
      retryAttempt: e.retry_attempt,
      leaseOwner: e.lease_owner,
      leaseEpoch: e.lease_epoch,
      leaseExpired: e.lease_expired,
      nothingToApprove: e.nothing_to_approve === true,
    })),
    earlier: row.executions.filter((e) => e.attempt_epoch !== row.attempt_epoch).map((e) => ({ id: e.id, status: e.status })),
  };
}

/** withLockedRun runs one command on a run; undefined when the run does not exist. */
export async function withLockedRun<R>(trx: Trx, runId: string, decide: Decide<R>, options: { actor?: string; lock?: 'update' | 'none' } = {}): Promise<R | undefined> {
  const row = await readRun(trx, runId, options.lock ?? 'update');
  if (!row) return undefined;
  const snapshot = snapshotOf(row);
  const ctx: DecideContext = { actor: options.actor, newId };
  const decision = decide(snapshot, ctx, row);
  await applyDecision(trx, row, snapshot, decision.writes, options.actor);
  return decision.result;
}

/**
 * applyDecision makes the writes of a decision, in order; the snapshot names what a new execution
 * needs. Consecutive new executions (a run's roots, the steps one completion unblocks) are one statement.
 */
async function applyDecision(trx: Trx, row: LockedRunRow, snapshot: RunSnapshot, writes: readonly RunWrite[], actor?: string): Promise<void> {
  let state = snapshot;
  for (let i = 0; i < writes.length; ) {
    const created = newExecutionsAt(writes, i);
    if (created.length) {
      await insertExecutions(trx, created.map((w) => newExecutionRow(state, w, actor)));
      for (const w of created) {
        await observeAfterCommit(trx, row, state, w);
        state = applyWrites(state, [w]);
      }
      i += created.length;
      continue;
    }
    const w = writes[i++];
    if (await applyWrite(trx, state, w, actor)) await observeAfterCommit(trx, row, state, w);
    state = applyWrites(state, [w]);
  }
}

type NewExecutionWrite = Extract<RunWrite, { kind: 'newExecution' }>;

/** The run of consecutive new-execution writes starting at `from` (empty when that write is another kind). */
function newExecutionsAt(writes: readonly RunWrite[], from: number): NewExecutionWrite[] {
  const end = writes.findIndex((w, i) => i >= from && w.kind !== 'newExecution');
  return writes.slice(from, end < 0 ? writes.length : end) as NewExecutionWrite[];
}

function newExecutionRow(s: RunSnapshot, w: NewExecutionWrite, actor?: string): { values: NewExecutionValues; transition: TransitionRecord } {
  const step = stepOf(s, w.stepId);
  return {
    values: {
      id: w.id,
      organizationId: s.organizationId,
      runId: s.id,
      stepId: step.id,
      stepName: step.name,
      stepType: step.type,
      status: w.status,
      attemptEpoch: s.attemptEpoch,
      retryAttempt: w.retryAttempt,
      isLastRetry: isLastAttempt(step, w.retryAttempt),
      queueReason: w.reason,
      inputData: { with: step.with ?? {}, ...(s.input ? { inputs: s.input } : {}) },
      statusDetail: w.status === 'SUCCEEDED' && step.type === 'approval' ? { approvedBy: 'autoapprove' } : undefined,
    },
    transition: { runId: s.id, from: null, to: w.status, reason: w.reason, actor },
  };
}

/** Makes one write; false when it found nothing to do (a run start another claim made first). */
async function applyWrite(trx: Trx, s: RunSnapshot, w: RunWrite, actor?: string): Promise<boolean> {
  if (w.kind === 'run' && w.status && w.unlessAlready) return startRun(trx, s, w, actor);
  await applyGuarded(trx, s, w, actor);
  return true;
}

async function startRun(trx: Trx, s: RunSnapshot, w: Extract<RunWrite, { kind: 'run' }>, actor?: string): Promise<boolean> {
  const { from, to, reason } = w.status!;
  if (await updateRun(trx, s.id, { status: to, ...w.set }, { runId: s.id, from, to, reason, actor })) return true;
  // A fresh statement sees what the guard waited for: the other claim's commit.
  if ((await readRunStatus(trx, s.id)) === to) return false;
  throw new StaleWriteError(s.id);
}

async function applyGuarded(trx: Trx, s: RunSnapshot, w: RunWrite, actor?: string): Promise<void> {
  switch (w.kind) {
    case 'execution': {
      const { from, to, reason } = w.status;
      const done = await updateExecution(trx, w.id, { status: to, ...w.set }, { status: from, leaseEpoch: w.leaseEpoch }, { runId: s.id, from, to, reason, actor: actorOf(w, actor) });
      if (!done) throw new StaleWriteError(w.id);
      return;
    }
    case 'newExecution':
      return insertExecutions(trx, [newExecutionRow(s, w, actor)]);
    case 'run': {
      if (!w.status) {
        await updateRun(trx, s.id, w.set);
        return;
      }
      const { from, to, reason } = w.status;
      if (!(await updateRun(trx, s.id, { status: to, ...w.set }, { runId: s.id, from, to, reason, actor }))) throw new StaleWriteError(s.id);
      return;
    }
    case 'dispatch':
      return enqueueStepJob(trx, w.id, s.id);
    case 'stopProcess':
      return notifyStepStopped(trx, w.id);
    case 'releaseStack':
      return releaseStack(trx, s.stackId!, s.id);
    case 'enterStackQueue':
      return enterStackQueue(trx, s.id, s.stackId, actor);
  }
}

/** A claim's history row names the worker; every other change the caller's actor. */
function actorOf(w: Extract<RunWrite, { kind: 'execution' }>, actor?: string): string | undefined {
  return w.set.lease ? w.set.lease.owner : actor;
}

/**
 * admitRun lets a run start its steps; for a stack run the caller holds the stack's row lock. A run
 * inserted by this very transaction is visible to no one else, so it needs no lock (`fresh`).
 */
async function admitRun(trx: Trx, runId: string, actor?: string, fresh = false): Promise<void> {
  await withLockedRun(trx, runId, (s, ctx) => decideAdmit(s, ctx), { actor, lock: fresh ? 'none' : 'update' });
}

/**
 * releaseStack frees the stack a finished run held and admits the oldest waiting run, so runs of one
 * stack go one at a time in the order they were triggered. Lock order: run, then stack, then the
 * next run (which nobody else locks before its stack admits it).
 */
async function releaseStack(trx: Trx, stackId: string, runId: string): Promise<void> {
  const stack = await lockStack(trx, stackId);
  if (!stack || stack.active_run_id !== runId) return;
  const next = await findNextWaitingRunId(trx, stackId);
  if (next) {
    await setStackActiveRun(trx, stackId, next);
    await admitRun(trx, next, 'engine');
  } else await setStackActiveRun(trx, stackId, null);
}

/**
 * enterStackQueue admits a QUEUED run at once when its stack is free, else leaves it waiting in FIFO
 * order (claimStackForRun's row lock serializes this with releaseStack). `triggered`: the run was
 * just inserted by this transaction, and is recorded as the stack's latest run.
 */
export async function enterStackQueue(trx: Trx, runId: string, stackId: string | null, actor?: string, triggered = false): Promise<void> {
  if (stackId && (await claimStackForRun(trx, stackId, runId, triggered)) !== runId) return;
  await admitRun(trx, runId, actor, triggered);
}
