import { PlinthApiError, PlinthTimeoutError } from './errors.js';
import { TERMINAL_RUN_STATUSES, type PipelineRun, type RunStatus, type StepExecution } from './types.js';

export interface WaitOptions {
  /** Statuses that end the wait (default: SUCCEEDED, FAILED, CANCELLED). */
  until?: readonly RunStatus[];
  /** Give up after this long with a PlinthTimeoutError (default: never). */
  timeoutMs?: number;
  /** Time between two reads of the run (default 1,000 ms). */
  intervalMs?: number;
  signal?: AbortSignal;
  /** Called with every read of the run (progress). */
  onPoll?: (run: PipelineRun) => void;
}

/** waitForRun reads the run until its status is one of `until`, and returns it. */
export async function waitForRun(read: (id: string) => Promise<PipelineRun>, id: string, options: WaitOptions = {}): Promise<PipelineRun> {
  const until = options.until ?? TERMINAL_RUN_STATUSES;
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 1000;
  for (;;) {
    options.signal?.throwIfAborted();
    const run = await read(id);
    options.onPoll?.(run);
    if (until.includes(run.status)) return run;
    const left = deadline - Date.now();
    if (left <= 0) throw new PlinthTimeoutError(`run ${id} is still ${run.status}; gave up waiting for ${until.join(', ')}`);
    await new Promise<void>((resolve) => setTimeout(resolve, Math.min(interval, left)));
  }
}

export interface StartRunOptions {
  /** apply (default): the change pipeline; plan: up to its first approval; destroy: the destroy pipeline. */
  action?: 'plan' | 'apply' | 'destroy';
  /** Run inputs, given to steps as PLINTH_INPUTS. */
  inputs?: Record<string, unknown>;
  description?: string;
  /** Approve the run's approval steps without a person. */
  autoApprove?: boolean;
}

export interface DecideOptions {
  /** The step to decide on (its `stepId` in the config); by default the one step waiting. */
  stepId?: string;
}

/**
 * waitingStep picks the step execution a decision is about: the one waiting for approval (of `stepId`,
 * when given). None, or several without a `stepId`, is a PlinthApiError 409 with an `Sdk:Approval:`
 * code, as the API answers a decision on a step that is not waiting.
 */
export function waitingStep(runId: string, steps: StepExecution[], stepId?: string): StepExecution {
  const waiting = steps.filter((s) => s.status === 'WAITING_FOR_APPROVAL' && (stepId === undefined || s.stepId === stepId));
  if (waiting.length === 1) return waiting[0];
  if (waiting.length === 0) {
    const message =
      stepId === undefined
        ? `No step of run ${runId} is waiting for approval`
        : `Step "${stepId}" of run ${runId} is not waiting for approval (${steps.filter((s) => s.stepId === stepId).at(-1)?.status ?? 'no such step has started'})`;
    throw new PlinthApiError(409, { code: 'Sdk:Approval:NONE_WAITING', message });
  }
  const ids = waiting.map((s) => `"${s.stepId}"`).join(', ');
  throw new PlinthApiError(409, {
    code: 'Sdk:Approval:SEVERAL_WAITING',
    message: `Steps ${ids} of run ${runId} are waiting for approval: name one with stepId`,
  });
}
