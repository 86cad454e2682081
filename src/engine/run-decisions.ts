import { NotFoundError } from '../platform/errors.ts';
import type { ErrorBody } from '../platform/schema.ts';
import type { StepConfig } from '../pipelines/pipeline-config.ts';
import { engineError } from './engine-errors.ts';
import {
  assertAwaitingApproval,
  assertCancellable,
  assertRetryable,
  isTerminalRun,
  isTerminalStep,
  nextRetry,
  planRun,
  type ExecutionState,
  type NewExecutionStatus,
  type RunAction,
  type RunStatus,
  type StepStatus,
} from './run-state.ts';

/**
 * The decision of every engine command, as a pure function of the run read under its lock: it
 * returns the writes to make (locked-run.ts applies them, in order, in the same transaction) and
 * what the caller gets back. Nothing here touches the database, so each is unit-tested on its own.
 */
export interface ExecutionSnapshot extends ExecutionState {
  leaseOwner: string | null;
  /** The fencing token of the current lease: every claim bumps it. */
  leaseEpoch: number;
  /** The lease ran out by the database's clock when the run was read. */
  leaseExpired: boolean;
}

export interface RunSnapshot {
  id: string;
  organizationId: string;
  status: RunStatus;
  /** A step of the current attempt epoch was claimed (the run left QUEUED once). */
  started: boolean;
  admitted: boolean;
  action: RunAction | null;
  autoapprove: boolean;
  attemptEpoch: number;
  stackId: string | null;
  input: Record<string, unknown> | null;
  steps: readonly StepConfig[];
  /** The executions of the current attempt epoch. */
  executions: readonly ExecutionSnapshot[];
  /** Executions of earlier epochs: all finished, only ever answered with a 409. */
  earlier: readonly { id: string; status: string }[];
}

export interface ExecutionSet {
  error?: ErrorBody | null;
  outputData?: Record<string, unknown> | null;
  statusDetail?: Record<string, unknown> | null;
  /** Take the lease (owner and duration; the epoch goes up by one), or drop it (null). */
  lease?: { owner: string; ms: number } | null;
  /** true: started now; null: not started (handed back). */
  started?: true | null;
  completed?: true;
}

export interface RunSet {
  error?: ErrorBody | null;
  admitted?: boolean;
  /** The current attempt epoch started now. */
  started?: boolean;
  completed?: boolean | null;
  attemptEpoch?: number;
}

export interface StatusChange<S> {
  from: S;
  to: S;
  reason: string;
}

export type RunWrite =
  /** A change of an execution, guarded: it applies only while the row still has `from` and `leaseEpoch`. */
  | { kind: 'execution'; id: string; leaseEpoch: number; status: StatusChange<StepStatus>; set: ExecutionSet }
  | { kind: 'newExecution'; id: string; stepId: string; status: NewExecutionStatus; retryAttempt: number; reason: string }
  /** A change of the run; with a status change, guarded: it applies only while the run still has `from`. */
  | { kind: 'run'; status?: StatusChange<RunStatus>; set: RunSet }
  /** Dispatch a job for an existing QUEUED execution (a hand-back). */
  | { kind: 'dispatch'; id: string }
  /** Tell the worker running this execution to kill its process now. */
  | { kind: 'stopProcess'; id: string }
  /** The run ended: its stack goes to the next waiting run. */
  | { kind: 'releaseStack' }
  /** The run ended before its stack admitted it: the runs waiting for its stack to be idle hear of it. */
  | { kind: 'releaseWaiting' }
  /** The run (retried) waits for its stack again, or is admitted at once. */
  | { kind: 'enterStackQueue' };

export interface Decision<R = void> {
  writes: RunWrite[];
  result: R;
}

export interface DecideContext {
  actor?: string;
  /** Ids for new executions (random in production, a counter in tests). */
  newId: () => string;
}

/** applyWrites is the snapshot as it is after `writes`: what the next decision (advance) sees. */
export function applyWrites(s: RunSnapshot, writes: readonly RunWrite[]): RunSnapshot {
  let next = s;
  for (const w of writes) {
    if (w.kind === 'execution') {
      next = {
        ...next,
        executions: next.executions.map((e) => {
          if (e.id !== w.id) return e;
          const lease =
            w.set.lease === undefined
              ? {}
              : w.set.lease === null
                ? { leaseOwner: null }
                : { leaseOwner: w.set.lease.owner, leaseEpoch: e.leaseEpoch + 1, leaseExpired: false };
          const outcome = w.set.outputData === undefined ? {} : { nothingToApprove: w.set.outputData?.needsApproval === false };
          const failure = w.set.error ? { error: w.set.error } : {};
          return { ...e, status: w.status.to, ...lease, ...outcome, ...failure };
        }),
      };
    } else if (w.kind === 'newExecution') {
      const created: ExecutionSnapshot = {
        id: w.id,
        stepId: w.stepId,
        status: w.status,
        retryAttempt: w.retryAttempt,
        leaseOwner: null,
        leaseEpoch: 0,
        leaseExpired: false,
      };
      next = { ...next, executions: [...next.executions, created] };
    } else if (w.kind === 'run') {
      next = {
        ...next,
        ...(w.status ? { status: w.status.to } : {}),
        ...(w.set.started ? { started: true } : w.set.started === false ? { started: false } : {}),
        ...(w.set.admitted !== undefined ? { admitted: w.set.admitted } : {}),
        ...(w.set.attemptEpoch !== undefined ? { attemptEpoch: w.set.attemptEpoch, executions: [], earlier: [...next.earlier, ...next.executions] } : {}),
      };
    }
  }
  return next;
}

function executionWrite(e: ExecutionSnapshot, to: StepStatus, reason: string, set: ExecutionSet): RunWrite {
  return { kind: 'execution', id: e.id, leaseEpoch: e.leaseEpoch, status: { from: e.status, to, reason }, set };
}

/**
 * advance applies planRun: the steps that became ready start, a failed run cancels what still runs,
 * the run's status follows, and a run that ended hands its stack on.
 */
export function advance(s: RunSnapshot, reason: string, ctx: DecideContext): RunWrite[] {
  const plan = planRun(s);
  const writes: RunWrite[] = [];
  for (const id of plan.cancel) {
    const e = s.executions.find((x) => x.id === id)!;
    writes.push(executionWrite(e, 'CANCELLED', 'the run failed', { lease: null, completed: true }));
    if (e.status === 'RUNNING') writes.push({ kind: 'stopProcess', id });
  }
  for (const c of plan.create) writes.push({ kind: 'newExecution', id: ctx.newId(), stepId: c.stepId, status: c.status, retryAttempt: 0, reason: c.reason });
  if (plan.runStatus === s.status) return writes;
  const terminal = isTerminalRun(plan.runStatus);
  const set: RunSet = {
    ...(terminal ? { completed: true } : {}),
    ...(plan.error ? { error: plan.error } : {}),
    ...(plan.runStatus === 'RUNNING' && !s.started ? { started: true } : {}),
  };
  writes.push({ kind: 'run', status: { from: s.status, to: plan.runStatus, reason }, set });
  if (terminal && s.stackId) writes.push({ kind: 'releaseStack' });
  return writes;
}

/** thenAdvance is `writes` followed by what advance decides on the state they leave. */
function thenAdvance(s: RunSnapshot, writes: RunWrite[], reason: string, ctx: DecideContext): RunWrite[] {
  return [...writes, ...advance(applyWrites(s, writes), reason, ctx)];
}

/** failAttempt ends a failed attempt and follows the step's retry policy, then advances the run. */
function failAttempt(s: RunSnapshot, e: ExecutionSnapshot, failed: RunWrite, reason: string, ctx: DecideContext): RunWrite[] {
  const step = stepOf(s, e.stepId);
  const retry = nextRetry(step, e.retryAttempt);
  const writes: RunWrite[] = [failed];
  if (retry)
    writes.push({
      kind: 'newExecution',
      id: ctx.newId(),
      stepId: step.id,
      status: 'QUEUED',
      retryAttempt: retry.retryAttempt,
      reason: `retry ${retry.retryAttempt} after: ${reason}`,
    });
  return thenAdvance(s, writes, reason, ctx);
}

export function stepOf(s: Pick<RunSnapshot, 'steps'>, stepId: string): StepConfig {
  const step = s.steps.find((x) => x.id === stepId);
  if (!step) throw new Error(`step ${stepId} is not in the run's pipeline version`);
  return step;
}

/** admit lets a run start its steps (its stack is free, or it has none). */
export function decideAdmit(s: RunSnapshot, ctx: DecideContext): Decision {
  return { writes: thenAdvance(s, [{ kind: 'run', set: { admitted: true } }], 'admitted', ctx), result: undefined };
}

function waitingExecution(s: RunSnapshot, executionId: string): ExecutionSnapshot {
  const e = s.executions.find((x) => x.id === executionId);
  const status = e?.status ?? s.earlier.find((x) => x.id === executionId)?.status;
  if (!status) throw new NotFoundError('StepExecution', executionId);
  assertAwaitingApproval(status, executionId);
  return e!;
}

/** approve lets a run go on past an approval step; a second approval is a 409. */
export function decideApprove(s: RunSnapshot, executionId: string, decidedAt: string, ctx: DecideContext): Decision {
  const e = waitingExecution(s, executionId);
  const statusDetail = { approval: 'APPROVED', approvedBy: ctx.actor, decidedAt };
  return {
    writes: thenAdvance(s, [executionWrite(e, 'SUCCEEDED', 'approved', { statusDetail, completed: true })], 'a step was approved', ctx),
    result: undefined,
  };
}

/** reject fails the approval step, and with it the run (approvals are never retried). */
export function decideReject(s: RunSnapshot, executionId: string, decidedAt: string, ctx: DecideContext): Decision {
  const e = waitingExecution(s, executionId);
  const set: ExecutionSet = {
    statusDetail: { approval: 'REJECTED', rejectedBy: ctx.actor, decidedAt },
    error: engineError('Engine:Approval:REJECTED', `Rejected by ${ctx.actor}`, { rejectedBy: ctx.actor }),
    completed: true,
  };
  return { writes: thenAdvance(s, [executionWrite(e, 'FAILED', 'rejected', set)], 'a step was rejected', ctx), result: undefined };
}

/** cancel ends an unfinished run: its unfinished steps are cancelled (running processes told to stop). */
export function decideCancel(s: RunSnapshot, ctx: DecideContext, why?: string): Decision {
  assertCancellable(s.status, s.id);
  const writes: RunWrite[] = [];
  for (const e of s.executions) {
    if (isTerminalStep(e.status)) continue;
    writes.push(executionWrite(e, 'CANCELLED', 'the run was cancelled', { lease: null, completed: true }));
    if (e.status === 'RUNNING') writes.push({ kind: 'stopProcess', id: e.id });
  }
  const error = engineError('Engine:Run:CANCELLED', why ?? `Cancelled by ${ctx.actor}`);
  writes.push({ kind: 'run', status: { from: s.status, to: 'CANCELLED', reason: 'cancelled' }, set: { completed: true, error } });
  if (s.stackId) writes.push({ kind: s.admitted ? 'releaseStack' : 'releaseWaiting' });
  return { writes, result: undefined };
}

/** retry starts a finished, unsuccessful run again as a new attempt epoch, back in its stack's queue. */
export function decideRetry(s: RunSnapshot): Decision {
  assertRetryable(s.status, s.id);
  const epoch = s.attemptEpoch + 1;
  const set: RunSet = { attemptEpoch: epoch, admitted: false, started: false, completed: null, error: null };
  return {
    writes: [{ kind: 'run', status: { from: s.status, to: 'QUEUED', reason: `retried as attempt ${epoch}` }, set }, { kind: 'enterStackQueue' }],
    result: undefined,
  };
}

export type ClaimResult =
  | { kind: 'claimed'; leaseEpoch: number; retryAttempt: number; stepId: string }
  /** Not QUEUED any more (cancelled, claimed through a duplicate job, of an older epoch): nothing to do. */
  | { kind: 'skip'; status: string };

/**
 * claim moves a QUEUED execution to RUNNING under the worker's lease, with a new epoch; the first
 * claim of an attempt also moves the run to RUNNING. `mayAdopt` is set when an earlier try of the
 * same claim failed without knowing whether it committed: an execution this worker already holds is
 * then its own claim.
 */
export function decideClaim(
  s: RunSnapshot,
  executionId: string,
  worker: { id: string; leaseMs: number; mayAdopt: boolean },
  ctx: DecideContext,
): Decision<ClaimResult> {
  const e = s.executions.find((x) => x.id === executionId);
  if (e && worker.mayAdopt && e.status === 'RUNNING' && e.leaseOwner === worker.id) {
    return { writes: [], result: { kind: 'claimed', leaseEpoch: e.leaseEpoch, retryAttempt: e.retryAttempt, stepId: e.stepId } };
  }
  if (e?.status !== 'QUEUED') return { writes: [], result: { kind: 'skip', status: e?.status ?? 'SUPERSEDED' } };
  const claim = executionWrite(e, 'RUNNING', 'claimed by a worker', { lease: { owner: worker.id, ms: worker.leaseMs }, started: true });
  // A claim finishes nothing, so all it can change besides its execution is the run: its start.
  const start = advance(applyWrites(s, [claim]), 'a step started', ctx);
  return { writes: [claim, ...start], result: { kind: 'claimed', leaseEpoch: e.leaseEpoch + 1, retryAttempt: e.retryAttempt, stepId: e.stepId } };
}

export interface StepOutcome {
  status: 'SUCCEEDED' | 'FAILED';
  error?: ErrorBody;
  outputData?: Record<string, unknown>;
  statusDetail?: Record<string, unknown>;
}

/** The attempt a worker holds: its execution id, its worker, and the lease epoch of its claim. */
export interface HeldAttempt {
  executionId: string;
  workerId: string;
  leaseEpoch: number;
}

function heldExecution(s: RunSnapshot, a: HeldAttempt): ExecutionSnapshot | undefined {
  const e = s.executions.find((x) => x.id === a.executionId);
  return e && e.status === 'RUNNING' && e.leaseOwner === a.workerId && e.leaseEpoch === a.leaseEpoch ? e : undefined;
}

/**
 * complete records the end of an attempt if the worker still holds its lease at the epoch it
 * claimed; a cancelled attempt, or one failed over, is no longer the worker's to complete (false).
 */
export function decideComplete(s: RunSnapshot, a: HeldAttempt, outcome: StepOutcome, ctx: DecideContext): Decision<boolean> {
  const e = heldExecution(s, a);
  if (!e) return { writes: [], result: false };
  const reason = outcome.status === 'SUCCEEDED' ? 'the step succeeded' : (outcome.error?.message ?? 'the step failed');
  const set: ExecutionSet = {
    error: outcome.error ?? null,
    outputData: outcome.outputData ?? null,
    statusDetail: outcome.statusDetail ?? null,
    lease: null,
    completed: true,
  };
  const ended = executionWrite(e, outcome.status, reason, set);
  const writes = outcome.status === 'FAILED' ? failAttempt(s, e, ended, reason, ctx) : thenAdvance(s, [ended], reason, ctx);
  return { writes, result: true };
}

/** handBack returns a drained worker's attempt to the queue: the process was stopped, not failed. */
export function decideHandBack(s: RunSnapshot, a: HeldAttempt): Decision<boolean> {
  const e = heldExecution(s, a);
  if (!e) return { writes: [], result: false };
  const back = executionWrite(e, 'QUEUED', 'handed back by a draining worker', { lease: null, started: null });
  return { writes: [back, { kind: 'dispatch', id: e.id }], result: true };
}

/**
 * reap fails an attempt whose lease ran out: its worker died or lost the database for longer than
 * the lease, and whether its process finished is unknown. The retry policy decides what follows.
 */
export function decideReap(s: RunSnapshot, executionId: string, ctx: DecideContext): Decision<boolean> {
  const e = s.executions.find((x) => x.id === executionId);
  if (e?.status !== 'RUNNING' || !e.leaseExpired) return { writes: [], result: false };
  const error = engineError(
    'Engine:Worker:LOST',
    `Worker ${e.leaseOwner} stopped renewing its lease; the outcome of the attempt is unknown and it is failed over`,
    {
      workerId: e.leaseOwner,
    },
  );
  const failed = executionWrite(e, 'FAILED', error.message, { error, lease: null, completed: true });
  return { writes: failAttempt(s, e, failed, error.message, ctx), result: true };
}
