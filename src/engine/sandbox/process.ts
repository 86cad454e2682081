import { spawn, type ChildProcess, type StdioPipe } from 'node:child_process';
import type { SandboxedProcess } from './sandbox.ts';

/** Signals the whole process group: the sandbox's own processes (and a step's that did not leave it) go with it. */
export function killGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

export interface GuardedSpawn {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Opens a pipe on the child's fd 3 (left to the caller): how the namespaced sandbox hands the step its spec. */
  fd3?: boolean;
  /**
   * Whether the group can hold processes after its leader exited (the unisolated guard does, and is
   * killed then). A namespaced step's group cannot: once the sandbox exited its pid may name another
   * process's group, which must not be signalled.
   */
  groupOutlivesLeader: boolean;
}

/**
 * spawnGuarded starts a process in its own process group whose stdin is a pipe only this process holds.
 * It exists to reach end-of-file when the worker dies (even by SIGKILL), which the guard inside the
 * sandbox takes as the order to kill the step; nothing is ever written to it.
 */
export function spawnGuarded(o: GuardedSpawn): SandboxedProcess {
  const stdio: StdioPipe[] = o.fd3 ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'];
  const child: ChildProcess = spawn(o.file, o.args, { cwd: o.cwd, env: o.env, detached: true, stdio });
  child.stdin!.on('error', () => {});
  // A process that ends before reading it closes the pipe: not an error of the worker's.
  if (o.fd3) (child.stdio[3] as NodeJS.WritableStream & { on(event: 'error', fn: () => void): void }).on('error', () => {});
  const signal = (s: NodeJS.Signals) => {
    const exited = child.exitCode !== null || child.signalCode !== null;
    if (!child.pid || (exited && !o.groupOutlivesLeader)) return;
    killGroup(child.pid, s);
  };
  child.once('close', () => child.stdin!.destroy());
  return { child, terminate: () => signal('SIGTERM'), interrupt: () => signal('SIGINT'), kill: () => signal('SIGKILL') };
}
