import type { ErrorBody } from '../platform/schema.ts';

/**
 * Every error code the engine writes on a run or a step execution, in one list (docs/engine.md).
 * API errors (`Api:…`) live with the typed errors of src/platform/errors.ts; these are outcomes.
 */
export const ENGINE_ERROR_CODES = [
  'Engine:Run:STEP_FAILED',
  'Engine:Run:CANCELLED',
  'Engine:Approval:REJECTED',
  /** The worker holding the attempt stopped renewing its lease: its outcome is unknown. */
  'Engine:Worker:LOST',
  /** The worker itself failed while running the attempt (a bug, not the step's fault). */
  'Engine:Worker:ERROR',
  'Engine:Script:FAILED',
  'Engine:Script:SPAWN_FAILED',
  'Engine:Step:TIMED_OUT',
  'Engine:ExecutionEnvironment:UNSUPPORTED',
  'Engine:StepType:NOT_IMPLEMENTED',
  'Engine:StepType:NOT_DISPATCHABLE',
  /** No isolation on this host and no single-tenant opt-out (PLINTH_SANDBOX): script steps refuse to run. */
  'Engine:Sandbox:UNAVAILABLE',
  /** Some of the step's output could not be stored after retries: a step never succeeds with lines missing. */
  'Engine:Log:STORE_FAILED',
  /** The checkout of the stack's source failed: the code source is gone, its credential refused, the ref unknown... */
  'Engine:Checkout:FAILED',
  /** The stack's source names a ref or path Plinth refuses (an option, a refspec, a path leaving the checkout). */
  'Engine:Checkout:INVALID_SOURCE',
  /** The attempt's lease was taken from this worker before it could record the run's commit. */
  'Engine:Checkout:FENCED',
] as const;
export type EngineErrorCode = (typeof ENGINE_ERROR_CODES)[number];

export function engineError(code: EngineErrorCode, message: string, metadata?: Record<string, unknown>): ErrorBody {
  return metadata ? { code, message, metadata } : { code, message };
}
