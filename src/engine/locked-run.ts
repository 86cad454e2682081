import type { RawBuilder, Selectable } from 'kysely';
import type { PipelineRunsTable } from '../platform/db/database.ts';
import type { Db, Executor, Trx } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import { statementKey, writeStatement, type StatementWrite } from './decision-statement.repo.ts';
import { observeAfterCommit } from './engine-metrics.ts';
import { enqueueStepJob, type NewExecutionRow } from './executions.repo.ts';
import { applyWrites, decideAdmit, stepOf, type DecideContext, type Decision, type RunSnapshot, type RunWrite } from './run-decisions.ts';
import { isLastAttempt, type RunAction, type RunStatus, type StepStatus } from './run-state.ts';
import { readRun, type LockedRunRow } from './runs.repo.ts';
import { claimStackForRun, lockStack, passStackToNextWaitingRun } from './stack-queue.repo.ts';

/**
 * The one shape of every change to a run: lock the run row, read it and its executions, let a pure
 * decision (run-decisions.ts) say what to write, write it, in the caller's transaction. Concurrent
 * approvals, cancels, completions and reapers of one run queue on the lock, and each decides on
 * what the previous one committed. A claim reads without the lock and outside a transaction
 * (withReadRun): its writes are guarded, and one statement, so parallel steps of one run claim side
 * by side. A run the caller's own transaction inserted is decided on as its insert returned it.
 */
export type Decide<R> = (snapshot: RunSnapshot, ctx: DecideContext, row: LockedRunRow) => Decision<R>;

/** A guarded write found its row changed under it: only possible for a run read without the lock. */
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
export async function withLockedRun<R>(trx: Trx, runId: string, decide: Decide<R>, options: LockedRunOptions = {}): Promise<R | undefined> {
  const row = await readRun(trx, runId, 'update');
  if (row) return decideOn(trx, row, decide, { ...options, inTransaction: true });
  if (options.alongside) await writeStatement(trx, [{ kind: 'alongside', statement: options.alongside }]);
  return undefined;
}

export interface LockedRunOptions {
  actor?: string;
  /** A write made in the decision's first statement whatever it decides (a step's last log lines). */
  alongside?: RawBuilder<unknown>;
  /** Given the run's row as each statement that changes it leaves it: what a caller showing the run shows. */
  onRunRow?: (row: Selectable<PipelineRunsTable>) => void;
}

/** Decides on a run as read (locked, visible to this transaction alone, or read for a claim) and applies the writes. */
async function decideOn<R>(ex: Executor, row: LockedRunRow, decide: Decide<R>, options: LockedRunOptions & { inTransaction: boolean }): Promise<R> {
  const snapshot = snapshotOf(row);
  const decision = decide(snapshot, { actor: options.actor, newId }, row);
  await applyDecision(ex, row, snapshot, decision.writes, options);
  return decision.result;
}

/**
 * withReadRun is a claim's shape of a command, outside any transaction: the run read without a lock,
 * the decision, and its writes made as one statement, which is atomic by itself. Every write is
 * guarded; one that finds its row changed throws StaleWriteError, and then nothing was written.
 */
export async function withReadRun<R>(db: Db, runId: string, decide: Decide<R>, options: { actor?: string } = {}): Promise<R | undefined> {
  const row = await readRun(db, runId, 'none');
  return row ? decideOn(db, row, decide, { actor: options.actor, inTransaction: false }) : undefined;
}

interface Planned {
  /** Undefined for the write made alongside the decision's. */
  write: RunWrite | undefined;
  statement: StatementWrite;
  /** The snapshot the write was decided on (what its metrics read). */
  before: RunSnapshot;
}

/**
 * applyDecision makes the writes of a decision, in order: consecutive writes of rows, history rows and
 * notifications are one statement (decision-statement.repo.ts) until one would write a row the
 * statement already writes; the stack queue's writes are statements of their own. Outside a
 * transaction the decision must fit in one statement.
 */
async function applyDecision(ex: Executor, row: LockedRunRow, snapshot: RunSnapshot, writes: readonly RunWrite[], o: LockedRunOptions & { inTransaction: boolean }): Promise<void> {
  let state = snapshot;
  let group: Planned[] = o.alongside ? [{ write: undefined, statement: { kind: 'alongside', statement: o.alongside }, before: snapshot }] : [];
  const keys = new Set<string>();
  const flush = async () => {
    if (group.length) await writeGroup(ex, row, group, o);
    group = [];
    keys.clear();
  };
  for (const w of writes) {
    const statement = statementWriteOf(state, w, o.actor);
    const key = statement && statementKey(statement);
    if (!statement || (key && keys.has(key))) {
      if (!o.inTransaction) throw new Error(`a decision made outside a transaction must be one statement (${w.kind})`);
      await flush();
    }
    if (statement) {
      if (key) keys.add(key);
      group.push({ write: w, statement, before: state });
    } else await applyStackWrite(ex as Trx, state, w, o.actor);
    state = applyWrites(state, [w]);
  }
  await flush();
}

/** Makes a group of writes as one statement; a guarded write that found its row changed throws StaleWriteError. */
async function writeGroup(ex: Executor, row: LockedRunRow, group: readonly Planned[], o: LockedRunOptions & { inTransaction: boolean }): Promise<void> {
  const { changed, runStatus, runRow } = await writeStatement(ex, group.map((g) => g.statement), { returnRun: o.onRunRow !== undefined });
  if (runRow) o.onRunRow?.(runRow);
  const applied = group.filter((g, i) => {
    const w = g.statement;
    if (w.kind === 'runStart') {
      // Not started by this claim: found started by a parallel one (the run's lock made it wait for it).
      if (changed[i] === 0 && runStatus !== w.transition.to) throw new StaleWriteError(w.runId);
      return changed[i] > 0;
    }
    if (w.kind === 'execution' && changed[i] !== 1) throw new StaleWriteError(w.id);
    if (w.kind === 'run' && w.transition && changed[i] !== 1) throw new StaleWriteError(w.runId);
    return true;
  });
  for (const g of applied) if (g.write) await observeAfterCommit(ex, row, g.before, g.write, o.inTransaction);
}

/** The write as a part of one statement; undefined for the stack queue's writes, which read before they write. */
function statementWriteOf(s: RunSnapshot, w: RunWrite, actor?: string): StatementWrite | undefined {
  switch (w.kind) {
    case 'execution': {
      const { from, to, reason } = w.status;
      return { kind: 'execution', id: w.id, changes: { status: to, ...w.set }, guard: { status: from, leaseEpoch: w.leaseEpoch }, transition: { runId: s.id, from, to, reason, actor: actorOf(w, actor) } };
    }
    case 'newExecution':
      return { kind: 'newExecutions', rows: [newExecutionRow(s, w, actor)] };
    case 'run': {
      if (!w.status) return { kind: 'run', runId: s.id, changes: w.set };
      const { from, to, reason } = w.status;
      const transition = { runId: s.id, from, to, reason, actor };
      return w.unlessAlready ? { kind: 'runStart', runId: s.id, changes: { status: to, ...w.set }, transition } : { kind: 'run', runId: s.id, changes: { status: to, ...w.set }, transition };
    }
    case 'stopProcess':
      return { kind: 'stopProcess', id: w.id };
    default:
      return undefined;
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

/** The writes that are not one statement's part: a redispatch, and the stack queue's. */
async function applyStackWrite(trx: Trx, s: RunSnapshot, w: RunWrite, actor?: string): Promise<void> {
  switch (w.kind) {
    case 'dispatch':
      return enqueueStepJob(trx, w.id, s.id);
    case 'releaseStack':
      return releaseStack(trx, s.stackId!, s.id);
    case 'enterStackQueue':
      return enterStackQueue(trx, s.id, s.stackId, actor);
    default:
      throw new Error(`${w.kind} is a statement's part`);
  }
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
async function releaseStack(trx: Trx, stackId: string, runId: string): Promise<void> {
  const stack = await lockStack(trx, stackId);
  if (!stack || stack.active_run_id !== runId) return;
  const next = await passStackToNextWaitingRun(trx, stackId);
  if (next) await admitRun(trx, next, 'engine');
}

/**
 * enterStackQueue admits a QUEUED run (retried) at once when its stack is free, else leaves it waiting
 * in FIFO order (claimStackForRun's row lock serializes this with releaseStack).
 */
export async function enterStackQueue(trx: Trx, runId: string, stackId: string | null, actor?: string): Promise<void> {
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
  await decideOn(trx, run, (s, ctx) => decideAdmit(s, ctx), { actor, inTransaction: true, onRunRow: (row) => (admitted = row) });
  return admitted;
}
