import type { RawBuilder, Selectable } from 'kysely';
import type { PipelineRunsTable } from '../platform/db/database.ts';
import type { Trx } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import { observeAfterCommit } from './engine-metrics.ts';
import { enqueueStepJob, executionUpdate, insertExecution, notifyStop, type NewExecutionRow } from './executions.repo.ts';
import { applyWrites, decideAdmit, decideCancel, stepOf, type DecideContext, type Decision, type RunSnapshot, type RunWrite } from './run-decisions.ts';
import { storyLineOf, tellAfterCommit } from './run-story.ts';
import { isLastAttempt, type RunAction, type RunStatus, type StepStatus } from './run-state.ts';
import { insertTransition, readRun, runUpdate, type LockedRunRow } from './runs.repo.ts';
import { claimStackForRun, findBusyStack, lockRunsWaitingFor, lockStack, passStackToNextWaitingRun, setBlockingStack } from './stack-queue.repo.ts';
import { stackRunFinished } from './stack-run-hooks.ts';

/**
 * The one shape of every change to a run: lock the run row and read it with its executions
 * (readRun), let a pure decision (run-decisions.ts) say what to write, and write it, one plain
 * statement per write, in the caller's transaction. Claims, approvals, cancels, completions and
 * reapers of one run queue on the lock, and each decides on what the previous one committed. A run
 * the caller's own transaction inserted is decided on as its insert returned it.
 */
export type Decide<R> = (snapshot: RunSnapshot, ctx: DecideContext, row: LockedRunRow) => Decision<R>;

/**
 * A guarded write found its row changed under it. Under the run's lock it cannot happen: this is
 * the guard's alarm, and the transaction rolls back and is decided again on a fresh read.
 */
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

export interface LockedRunOptions {
  actor?: string;
  /** A write made in the same transaction whatever the decision (a step's last log lines). */
  alongside?: RawBuilder<unknown>;
  /** Given the run's row as each write that changes it leaves it: what a caller showing the run shows. */
  onRunRow?: (row: Selectable<PipelineRunsTable>) => void;
}

/** withLockedRun runs one command on a run; undefined when the run does not exist. */
export async function withLockedRun<R>(trx: Trx, runId: string, decide: Decide<R>, options: LockedRunOptions = {}): Promise<R | undefined> {
  const row = await readRun(trx, runId);
  if (options.alongside) await options.alongside.execute(trx);
  return row ? decideOn(trx, row, decide, options) : undefined;
}

/** Decides on a run as read (locked, or visible to this transaction alone) and makes the writes, in order. */
async function decideOn<R>(trx: Trx, row: LockedRunRow, decide: Decide<R>, options: LockedRunOptions): Promise<R> {
  let state = snapshotOf(row);
  const decision = decide(state, { actor: options.actor, newId }, row);
  for (const w of decision.writes) {
    await applyWrite(trx, state, w, options);
    await observeAfterCommit(trx, row, state, w);
    await tellAfterCommit(trx, () => storyLineOf(row, state, w, options.actor));
    state = applyWrites(state, [w]);
  }
  return decision.result;
}

async function applyWrite(trx: Trx, s: RunSnapshot, w: RunWrite, o: LockedRunOptions): Promise<void> {
  switch (w.kind) {
    case 'execution': {
      const { from, to, reason } = w.status;
      const changed = await executionUpdate(trx, w.id, { status: to, ...w.set }, { status: from, leaseEpoch: w.leaseEpoch })
        .returning('id')
        .execute();
      if (changed.length !== 1) throw new StaleWriteError(w.id);
      return insertTransition(trx, { runId: s.id, executionId: w.id, from, to, reason, actor: actorOf(w, o.actor) });
    }
    case 'newExecution':
      return insertExecution(trx, newExecutionRow(s, w, o.actor));
    case 'run': {
      const update = runUpdate(trx, s.id, w.status ? { status: w.status.to, ...w.set } : w.set);
      const [changed] = await (w.status ? update.where('status', '=', w.status.from) : update).returningAll().execute();
      if (!changed) throw new StaleWriteError(s.id);
      o.onRunRow?.(changed);
      if (w.status) await insertTransition(trx, { runId: s.id, from: w.status.from, to: w.status.to, reason: w.status.reason, actor: o.actor });
      return;
    }
    case 'stopProcess':
      return notifyStop(trx, w.id);
    case 'dispatch':
      return enqueueStepJob(trx, w.id, s.id);
    case 'releaseStack':
      await releaseStack(trx, s.stackId!, s.id, s.status === 'SUCCEEDED');
      return stackRunFinished(trx, { stackId: s.stackId!, runId: s.id, status: s.status, succeeded: s.status === 'SUCCEEDED' });
    case 'releaseWaiting':
      // It waits for nothing any more: a retry of it starts from its stack's queue.
      await setBlockingStack(trx, s.id, null);
      await releaseRunsWaitingFor(trx, s.stackId!, s.id, false);
      // It ended (cancelled) without its stack ever admitting it: it finished all the same.
      return stackRunFinished(trx, { stackId: s.stackId!, runId: s.id, status: s.status, succeeded: false });
    case 'enterStackQueue':
      return enterStackQueue(trx, s.id, s.stackId, o.actor);
  }
}

type NewExecutionWrite = Extract<RunWrite, { kind: 'newExecution' }>;

function newExecutionRow(s: RunSnapshot, w: NewExecutionWrite, actor?: string): NewExecutionRow {
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

/** A claim's history row names the worker; every other change the caller's actor. */
function actorOf(w: Extract<RunWrite, { kind: 'execution' }>, actor?: string): string | undefined {
  return w.set.lease ? w.set.lease.owner : actor;
}

/** admitRun lets a run start its steps; for a stack run the caller holds the stack's row lock. */
async function admitRun(trx: Trx, runId: string, actor?: string): Promise<void> {
  await withLockedRun(trx, runId, (s, ctx) => decideAdmit(s, ctx), { actor });
}

/**
 * releaseStack frees the stack a finished run held and admits the oldest waiting run, so runs of one
 * stack go one at a time in the order they were triggered. Lock order: run, then stack, then the
 * next run (which nobody else locks before its stack admits it).
 */
async function releaseStack(trx: Trx, stackId: string, runId: string, succeeded: boolean): Promise<void> {
  const stack = await lockStack(trx, stackId);
  if (!stack || stack.active_run_id !== runId) return;
  const next = await passStackToNextWaitingRun(trx, stackId);
  if (next) await admitRun(trx, next, 'engine');
  else await releaseRunsWaitingFor(trx, stackId, runId, succeeded);
}

/**
 * releaseRunsWaitingFor moves on the runs that waited for the stack to be idle: each waits for the next
 * of its stacks still busy, or enters its own stack's queue. When the run that just ended there did not
 * succeed (failed, or cancelled, even before its stack admitted it), they are cancelled instead: they
 * would deploy on what it failed to produce.
 */
async function releaseRunsWaitingFor(trx: Trx, stackId: string, endedRunId: string, succeeded: boolean): Promise<void> {
  for (const waiting of await lockRunsWaitingFor(trx, stackId)) {
    if (!succeeded) {
      await setBlockingStack(trx, waiting.id, null);
      const why = `Cancelled: run ${endedRunId} of stack ${stackId}, which this run waited for, did not succeed`;
      await withLockedRun(trx, waiting.id, (s, ctx) => decideCancel(s, ctx, why), { actor: 'engine' });
      continue;
    }
    const busy = await findBusyStack(trx, waiting.wait_for_stack_ids ?? []);
    await setBlockingStack(trx, waiting.id, busy ?? null);
    if (!busy) await enterStackQueue(trx, waiting.id, waiting.stack_id, 'engine');
  }
}

/**
 * enterStackQueue admits a QUEUED run (retried) at once when its stack is free, else leaves it waiting
 * in FIFO order (claimStackForRun's row lock serializes this with releaseStack).
 */
export async function enterStackQueue(trx: Trx, runId: string, stackId: string | null, actor?: string): Promise<void> {
  await setBlockingStack(trx, runId, null);
  if (stackId && (await claimStackForRun(trx, stackId, runId)) !== runId) return;
  await admitRun(trx, runId, actor);
}

/**
 * admitTriggeredRun admits a run this transaction inserted (`run`, as its insert returned it) and that
 * got its stack, or has none: nobody else sees it yet, so it is neither locked nor read again. Returns
 * the run's row as the admission left it (undefined when the admission did not change it).
 */
export async function admitTriggeredRun(trx: Trx, run: LockedRunRow, actor?: string): Promise<Selectable<PipelineRunsTable> | undefined> {
  let admitted: Selectable<PipelineRunsTable> | undefined;
  await decideOn(trx, run, (s, ctx) => decideAdmit(s, ctx), { actor, onRunRow: (row) => (admitted = row) });
  return admitted;
}
