import type { SandboxedProcess } from './sandbox.ts';

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
