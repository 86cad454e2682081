import type { Db, Trx } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import type { StepConfig } from '../pipelines/pipeline-config.ts';
import {
  claimStackForRun,
  findExecutionsOfEpoch,
  findNextWaitingRunId,
  insertExecution,
  lockRunById,
  lockStack,
  notifyStepStopped,
  setStackActiveRun,
  updateExecution,
  updateRun,
  type ExecutionRow,
  type LockedRunRow,
} from './engine.repo.ts';
import { isLastAttempt, isTerminalRun, planRun, type ExecutionState, type RunAction, type RunStatus, type StepStatus } from './transitions.ts';

/**
 * The one shape of every change to a run: a transaction, the run's row lock, the current executions,
 * a pure decision (transitions.ts), the writes, commit. Concurrent approvals, cancels and completions
 * of one run queue up on the lock, and each sees the state the previous one committed.
 */
export interface LockedRun {
  run: LockedRunRow;
  executions: ExecutionRow[];
}

export async function lockRun(trx: Trx, runId: string): Promise<LockedRun | undefined> {
  const run = await lockRunById(trx, runId);
  if (!run) return undefined;
  return { run, executions: await findExecutionsOfEpoch(trx, runId, run.attempt_epoch) };
}

export function inTransaction<T>(db: Db, fn: (trx: Trx) => Promise<T>): Promise<T> {
  return db.transaction().execute(fn);
}

/** Records in the locked state a change just written, so the decision that follows sees it without a re-read. */
export function setLocalStatus(locked: LockedRun, executionId: string, status: StepStatus): void {
  const e = locked.executions.find((x) => x.id === executionId);
  if (e) e.status = status;
}

export function stepOf(run: LockedRunRow, stepId: string): StepConfig {
  const step = run.config.steps.find((s) => s.id === stepId);
  if (!step) throw new Error(`step ${stepId} is not in pipeline version ${run.pipeline_version_id}`);
  return step;
}

function stateOf(locked: LockedRun) {
  return {
    status: locked.run.status as RunStatus,
    started: locked.run.last_attempt_started_at !== null,
    action: locked.run.action as RunAction | null,
    autoapprove: locked.run.autoapprove,
    steps: locked.run.config.steps,
    executions: locked.executions.map<ExecutionState>((e) => ({ id: e.id, stepId: e.step_id, status: e.status as StepStatus, retryAttempt: e.retry_attempt })),
  };
}

/** Inserts one execution of a step (a first attempt or a retry), dispatching it when it is QUEUED. */
export async function createExecution(
  trx: Trx,
  locked: LockedRun,
  step: StepConfig,
  status: StepStatus,
  reason: string,
  retryAttempt = 0,
  actor?: string,
): Promise<string> {
  const { run } = locked;
  const id = newId();
  await insertExecution(trx, {
    id,
    organizationId: run.organization_id,
    runId: run.id,
    stepId: step.id,
    stepName: step.name,
    stepType: step.type,
    status,
    attemptEpoch: run.attempt_epoch,
    retryAttempt,
    isLastRetry: isLastAttempt(step, retryAttempt),
    queueReason: reason,
    inputData: { with: step.with ?? {}, ...(run.input ? { inputs: run.input } : {}) },
    statusDetail: status === 'SUCCEEDED' && step.type === 'approval' ? { approvedBy: 'autoapprove' } : undefined,
  }, { runId: run.id, from: null, to: status, reason, actor });
  locked.executions.push({
    id,
    organization_id: run.organization_id,
    pipeline_run_id: run.id,
    step_id: step.id,
    step_name: step.name,
    step_type: step.type,
    status,
    attempt_epoch: run.attempt_epoch,
    retry_attempt: retryAttempt,
    lease_owner: null,
    lease_expires_at: null,
    last_log_seq: 0,
  });
  return id;
}

/** Moves an execution to a terminal status and records why; a running process is told to stop. */
export async function finishExecution(trx: Trx, runId: string, e: ExecutionRow, to: StepStatus, reason: string, actor?: string) {
  await updateExecution(trx, e.id, { status: to, leaseOwner: null, leaseMs: null, completed: true }, { runId, from: e.status, to, reason, actor });
  if (e.status === 'RUNNING') await notifyStepStopped(trx, e.id);
}

/**
 * advanceRun applies planRun to a locked run: starts the steps that became ready, settles the run's
 * status, and when the run ends hands its stack to the next waiting run.
 */
export async function advanceRun(trx: Trx, locked: LockedRun, reason: string, actor?: string): Promise<void> {
  const decision = planRun(stateOf(locked));
  const { run } = locked;
  for (const id of decision.cancel) {
    const e = locked.executions.find((x) => x.id === id)!;
    await finishExecution(trx, run.id, e, 'CANCELLED', 'the run failed', actor);
    e.status = 'CANCELLED';
  }
  for (const c of decision.create) await createExecution(trx, locked, stepOf(run, c.stepId), c.status, c.reason, 0, actor);
  if (decision.runStatus === run.status) return;
  const terminal = isTerminalRun(decision.runStatus);
  await updateRun(trx, run.id, {
    status: decision.runStatus,
    ...(terminal ? { completed: true } : {}),
    ...(decision.error ? { error: decision.error } : {}),
    ...(decision.runStatus === 'RUNNING' && !run.last_attempt_started_at ? { started: true } : {}),
  }, { runId: run.id, from: run.status, to: decision.runStatus, reason, actor });
  if (decision.runStatus === 'RUNNING' && !run.last_attempt_started_at) run.last_attempt_started_at = new Date();
  run.status = decision.runStatus;
  if (terminal && run.stack_id) await releaseStack(trx, run.stack_id, run.id);
}

/** admitRun lets a run start its steps; for a stack run the caller holds the stack's row lock. */
export async function admitRun(trx: Trx, runId: string, stackId: string | null, actor?: string): Promise<void> {
  await updateRun(trx, runId, { admitted: true });
  if (stackId) await setStackActiveRun(trx, stackId, runId);
  await advanceRun(trx, (await lockRun(trx, runId))!, 'admitted', actor);
}

/**
 * releaseStack frees the stack a finished run held and admits the oldest waiting run, so runs of one
 * stack go one at a time in the order they were triggered.
 */
export async function releaseStack(trx: Trx, stackId: string, runId: string): Promise<void> {
  const stack = await lockStack(trx, stackId);
  if (!stack || stack.active_run_id !== runId) return;
  const next = await findNextWaitingRunId(trx, stackId);
  if (next) await admitRun(trx, next, stackId, 'engine');
  else await setStackActiveRun(trx, stackId, null);
}

/**
 * enterStackQueue admits a QUEUED run at once when its stack is free, else leaves it waiting in FIFO
 * order (claimStackForRun's row lock serializes this with releaseStack). `latest` also records the
 * run as the stack's latest run.
 */
export async function enterStackQueue(trx: Trx, runId: string, stackId: string | null, actor?: string, latest = false): Promise<void> {
  if (stackId && (await claimStackForRun(trx, stackId, runId, latest)) !== runId) return;
  await updateRun(trx, runId, { admitted: true });
  await advanceRun(trx, (await lockRun(trx, runId))!, 'admitted', actor);
}
