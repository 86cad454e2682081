// The pipeline config: a DAG of steps. A step starts when every step it `needs` has
// succeeded; independent steps run in parallel. The validator that turns untrusted JSON into this type,
// listing every problem, lives beside it (pipeline-config.validate.ts).

export const STEP_TYPES = ['approval', 'script', 'opentofu.plan', 'opentofu.apply', 'opentofu.destroy', 'module.deploy'] as const;
export type StepType = (typeof STEP_TYPES)[number];

export interface StepRetry {
  /** Total attempts allowed, the first included (1 = no retry). */
  maxAttempts: number;
}

export interface StepConfig {
  id: string;
  name: string;
  type: StepType;
  needs?: string[];
  with?: Record<string, unknown>;
  retry?: StepRetry;
  timeoutSeconds?: number;
}

export interface PipelineConfig {
  steps: StepConfig[];
}
