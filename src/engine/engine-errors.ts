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
  /** An OpenTofu step of a run that has no stack, or whose stack is gone. */
  'OpenTofu:Step:NO_STACK',
  /** An OpenTofu command exited unsuccessfully (its output is in the step's log). */
  'OpenTofu:Command:FAILED',
  /** An apply found no saved plan of its run's attempt (no plan step ran before it). */
  'OpenTofu:Plan:NOT_FOUND',
  /** The saved plan does not open as this run's and attempt's: it is another run's, or an older attempt's. */
  'OpenTofu:Plan:NOT_THIS_RUN',
  /** A destroy step met a change plan, or an apply step a destroy plan. */
  'OpenTofu:Plan:WRONG_KIND',
  /** The stack's code declares a backend in an override file, which could move its state and credential elsewhere. */
  'OpenTofu:Backend:OVERRIDDEN',
  /** `init` recorded another backend than Plinth's (caught before anything used it). */
  'OpenTofu:Backend:NOT_PLINTH',
  /** The stack's sensitive values make more text to mask than a step's log mask holds (MAX_MASKED_FORM_BYTES). */
  'OpenTofu:Mask:TOO_LARGE',
  /** What `show -json`, `output -json` or the plan file gave back is not what OpenTofu writes, or too large. */
  'OpenTofu:Output:INVALID',
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
