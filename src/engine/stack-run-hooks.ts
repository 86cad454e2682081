import type { Trx } from '../platform/db/db.ts';
import type { RunStatus } from '../platform/db/enums.ts';

/** A stack's run that just finished, in the transaction that finished it. */
export interface FinishedStackRun {
  stackId: string;
  runId: string;
  /** How it ended: SUCCEEDED, FAILED or CANCELLED. */
  status: RunStatus;
  succeeded: boolean;
}

export type StackRunFinishedHook = (trx: Trx, finished: FinishedStackRun) => Promise<void>;

const hooks: StackRunFinishedHook[] = [];

/**
 * onStackRunFinished lets a domain above the engine act in the transaction that finishes a stack's run
 * (a module instance's delete completes when its destroy run succeeds). The engine cannot import those
 * domains, so they register here, once, when their module is loaded.
 */
export function onStackRunFinished(hook: StackRunFinishedHook): void {
  hooks.push(hook);
}

export async function stackRunFinished(trx: Trx, finished: FinishedStackRun): Promise<void> {
  for (const hook of hooks) await hook(trx, finished);
}
