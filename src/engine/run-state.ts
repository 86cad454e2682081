import { ConflictError } from '../platform/errors.ts';
import type { ErrorBody } from '../platform/schema.ts';
import { readySteps, withDescendants } from '../pipelines/dag.ts';
import type { StepConfig } from '../pipelines/pipeline-config.ts';
import { engineError } from './engine-errors.ts';
import type { RunAction, RunStatus, StepStatus } from '../platform/db/enums.ts';

/**
 * The engine's rules as pure functions of a run's state: what starts next (planRun), whether a
 * failed attempt is retried (nextRetry), and which moves a caller may make (assert…, a typed 409).
 * The decisions of every command (run-decisions.ts) are built from these; locked-run.ts applies them.
 */
export { RUN_ACTIONS, RUN_STATUSES, STEP_STATUSES, type RunAction, type RunStatus, type StepStatus } from '../platform/db/enums.ts';

const TERMINAL_RUN: ReadonlySet<string> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
const TERMINAL_STEP: ReadonlySet<string> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'SKIPPED']);

export function isTerminalRun(status: string): boolean {
  return TERMINAL_RUN.has(status);
}

export function isTerminalStep(status: string): boolean {
  return TERMINAL_STEP.has(status);
}

export interface ExecutionState {
  id: string;
  stepId: string;
  status: StepStatus;
  retryAttempt: number;
  /** It succeeded saying there is nothing to approve (a plan with no changes): approvals after it pass. */
  nothingToApprove?: boolean;
  /** Why it failed, when it failed in the decision being made: the run's error repeats it. */
  error?: ErrorBody;
}

export interface RunState {
  status: RunStatus;
  /** A step of this attempt has been claimed by a worker (the run left QUEUED once). */
  started: boolean;
  action: RunAction | null;
  autoapprove: boolean;
  steps: readonly StepConfig[];
  /** Every execution of the run's current attempt epoch, retries included. */
  executions: readonly ExecutionState[];
}

export type NewExecutionStatus = 'QUEUED' | 'WAITING_FOR_APPROVAL' | 'SUCCEEDED' | 'SKIPPED';

export interface NewExecution {
  stepId: string;
  status: NewExecutionStatus;
  reason: string;
}

export interface RunDecision {
  runStatus: RunStatus;
  create: NewExecution[];
  /** Non-terminal executions to cancel: the run failed, so nothing else of it may go on. */
  cancel: string[];
  error?: ErrorBody;
}

/** The latest attempt of each step: a retry supersedes the attempt it replaces. */
function latestByStep(executions: readonly ExecutionState[]): Map<string, ExecutionState> {
  const latest = new Map<string, ExecutionState>();
  for (const e of executions) {
    const seen = latest.get(e.stepId);
    if (!seen || e.retryAttempt > seen.retryAttempt) latest.set(e.stepId, e);
  }
  return latest;
}

/** A `plan` run stops before approval gates: an approval step and everything after it is skipped. */
function gatedSteps(state: RunState): Set<string> {
  if (state.action !== 'plan') return new Set();
  return withDescendants(
    state.steps,
    state.steps.filter((s) => s.type === 'approval').map((s) => s.id),
  );
}

function initialStatus(step: StepConfig, autoapprove: boolean, nothingToApprove: boolean): NewExecutionStatus {
  if (step.type !== 'approval') return 'QUEUED';
  return autoapprove || nothingToApprove ? 'SUCCEEDED' : 'WAITING_FOR_APPROVAL';
}

/** An approval whose every need succeeded with nothing to approve (plans without changes) passes by itself. */
function nothingToApprove(step: StepConfig, latest: Map<string, ExecutionState>): boolean {
  const needs = step.needs ?? [];
  return needs.length > 0 && needs.every((n) => latest.get(n)?.nothingToApprove === true);
}

/**
 * planRun decides what happens next in a run: which steps start (DAG order, independent steps
 * together), whether the run is done, and its status. Approval steps resolve here, without a worker.
 */
export function planRun(state: RunState): RunDecision {
  if (isTerminalRun(state.status)) return { runStatus: state.status, create: [], cancel: [] };
  const latest = latestByStep(state.executions);
  const status = new Map([...latest].map(([stepId, e]) => [stepId, e.status as string]));
  const create: NewExecution[] = [];
  const gated = gatedSteps(state);
  const add = (stepId: string, s: NewExecutionStatus, reason: string) => {
    create.push({ stepId, status: s, reason });
    status.set(stepId, s);
  };

  const failedStep = state.steps.find((s) => status.get(s.id) === 'FAILED' || status.get(s.id) === 'CANCELLED');
  if (failedStep) {
    const cancel = state.executions.filter((e) => !isTerminalStep(e.status)).map((e) => e.id);
    for (const s of state.steps) if (!status.has(s.id)) add(s.id, 'SKIPPED', `step "${failedStep.name}" failed`);
    // An internal error's text (the worker's own exception) stays on the step, where operators look.
    const stepError = latest.get(failedStep.id)?.error;
    const told = stepError && stepError.code !== 'Engine:Worker:ERROR' ? stepError : undefined;
    // What people see of a failed run (`plinth run get`, `run start --follow`) says why, not only where.
    const error = told
      ? engineError('Engine:Run:STEP_FAILED', `Step "${failedStep.name}" failed: ${told.message}`, {
          stepId: failedStep.id,
          stepError: { code: told.code, message: told.message },
        })
      : engineError('Engine:Run:STEP_FAILED', `Step "${failedStep.name}" failed`, { stepId: failedStep.id });
    return { runStatus: 'FAILED', create, cancel, error };
  }

  // In rounds, each in config order, so that what a step's start follows is created before it: an
  // approval that passes by itself makes the steps after it ready in the next round. Gated steps are
  // skipped in the first, whatever their needs (nothing outside the gates needs one of them).
  const succeeded = () => new Set([...status].filter(([, s]) => s === 'SUCCEEDED').map(([id]) => id));
  for (let first = true; ; first = false) {
    const ready = new Set(readySteps(state.steps, succeeded(), status).map((s) => s.id));
    const round = state.steps.filter((s) => !status.has(s.id) && (ready.has(s.id) || (first && gated.has(s.id))));
    if (round.length === 0) break;
    for (const step of round) {
      if (gated.has(step.id)) {
        add(step.id, 'SKIPPED', 'a plan run stops before approval steps');
        continue;
      }
      const unneeded = nothingToApprove(step, latest);
      const initial = initialStatus(step, state.autoapprove, unneeded);
      const why = unneeded ? 'approved automatically (nothing to approve)' : 'approved automatically (autoapprove)';
      add(step.id, initial, initial === 'SUCCEEDED' ? why : 'its needs succeeded');
    }
  }
  return { runStatus: runStatusOf(state, status), create, cancel: [] };
}

function runStatusOf(state: RunState, status: Map<string, string>): RunStatus {
  const values = state.steps.map((s) => status.get(s.id));
  if (values.every((v) => v === 'SUCCEEDED' || v === 'SKIPPED')) return 'SUCCEEDED';
  if (values.includes('RUNNING')) return 'RUNNING';
  if (values.includes('QUEUED')) return state.started ? 'RUNNING' : 'QUEUED';
  if (values.includes('WAITING_FOR_APPROVAL')) return 'WAITING_FOR_APPROVAL';
  // Unreachable for a validated DAG: nothing runs, waits or can start, yet not every step is done.
  return 'FAILED';
}

/** A retry of a failed attempt, when the step's policy allows another. */
export function nextRetry(step: StepConfig, failedAttempt: number): { retryAttempt: number; isLastRetry: boolean } | undefined {
  const maxAttempts = step.retry?.maxAttempts ?? 1;
  const retryAttempt = failedAttempt + 1;
  if (retryAttempt >= maxAttempts) return undefined;
  return { retryAttempt, isLastRetry: retryAttempt === maxAttempts - 1 };
}

export function isLastAttempt(step: StepConfig, retryAttempt: number): boolean {
  return retryAttempt >= (step.retry?.maxAttempts ?? 1) - 1;
}

/** Only a step waiting for approval can be approved or rejected; anything else is a 409. */
export function assertAwaitingApproval(status: string, stepExecutionId: string): void {
  if (status !== 'WAITING_FOR_APPROVAL') {
    throw new ConflictError('StepExecution', 'NOT_WAITING_FOR_APPROVAL', `Step execution ${stepExecutionId} is ${status}, not WAITING_FOR_APPROVAL`, {
      metadata: { status },
    });
  }
}

export function assertCancellable(status: string, runId: string): void {
  if (isTerminalRun(status)) {
    throw new ConflictError('PipelineRun', 'NOT_CANCELLABLE', `Pipeline run ${runId} is already ${status}`, { metadata: { status } });
  }
}

export function assertRetryable(status: string, runId: string): void {
  if (status !== 'FAILED' && status !== 'CANCELLED') {
    throw new ConflictError('PipelineRun', 'NOT_RETRYABLE', `Pipeline run ${runId} is ${status}; only a FAILED or CANCELLED run can be retried`, {
      metadata: { status },
    });
  }
}
