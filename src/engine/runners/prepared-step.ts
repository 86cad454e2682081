import type { StepWorkspace } from '../sandbox/index.ts';

/**
 * What a step runner gets once its attempt's workspace is ready: the workspace (processes may be spawned
 * in it one after another; its files persist between them) and, for a run of a stack with a source, the
 * checkout of the run's commit. Runners never read or write the workspace from the worker's side (a
 * tenant's symlink would point the worker at the host's files): data goes in through a process's
 * environment or stdin and comes out through its stdout.
 */
export interface PreparedStep {
  workspace: StepWorkspace;
  checkout: StepCheckout | null;
}

export interface StepCheckout {
  /** The exact commit every step of the run sees, as recorded on the run. */
  commitSha: string;
  /** The stack's path inside the checkout, relative to the workspace: where OpenTofu runs. */
  workingDirectory: string;
}
