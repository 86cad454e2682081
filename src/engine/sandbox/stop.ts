import type { SandboxedProcess } from './sandbox.ts';

/**
 * A cancelled step is interrupted, not killed: OpenTofu then writes its state and releases its lock, after
 * the run has ended. Its run credential holds for this long after the end of its run (never past its
 * expiry), and the stack's next run waits this long for the lock by default. A grace
 * (PLINTH_WORKER_KILL_GRACE_MS) longer than this leaves a stopped OpenTofu without a credential before
 * it is killed.
 */
export const STOPPING_STEP_WINDOW_MS = 120_000;

/** How long a stopped step's processes are given (PLINTH_WORKER_KILL_GRACE_MS, PLINTH_WORKER_TERM_GRACE_MS). */
export interface StopGrace {
  /** From the interrupt (SIGINT) to SIGTERM. */
  graceMs: number;
  /** From SIGTERM to SIGKILL. */
  termGraceMs: number;
}

/**
 * stopInStages stops a step's processes as OpenTofu and other CLIs expect: one SIGINT now (OpenTofu
 * finishes the provider call in flight, writes its state and releases its lock; a second would make
 * it exit at once), one SIGTERM after `graceMs` to what still runs, then SIGKILL of everything
 * `termGraceMs` later. Returns what cancels the stages still to come, once the processes have ended.
 */
export function stopInStages(proc: SandboxedProcess, grace: StopGrace): () => void {
  proc.interrupt();
  const timers = [setTimeout(() => proc.terminate(), grace.graceMs), setTimeout(() => proc.kill(), grace.graceMs + grace.termGraceMs)];
  return () => timers.forEach(clearTimeout);
}
