import { spawn, type ChildProcess, type StdioPipe } from 'node:child_process';
import type { SandboxedProcess } from './sandbox.ts';

/** Signals the whole process group: the sandbox's own processes (and a step's that did not leave it) go with it. */
function killGroup(pid: number, signal: NodeJS.Signals) {
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
}

/**
 * spawnGuarded starts a process in its own process group whose stdin is a pipe only this process holds.
 * It exists to reach end-of-file when the worker dies (even by SIGKILL), which the guard inside the
 * sandbox takes as the order to kill the step; nothing is ever written to it.
 */
export function spawnGuarded(o: GuardedSpawn): SandboxedProcess {
  const stdio: StdioPipe[] = ['pipe', 'pipe', 'pipe'];
  const child: ChildProcess = spawn(o.file, o.args, { cwd: o.cwd, env: o.env, detached: true, stdio });
  child.stdin!.on('error', () => {});
  // The group may hold processes after its leader exited (the unisolated guard's), and is signalled then too.
  const signal = (s: NodeJS.Signals) => {
    if (child.pid) killGroup(child.pid, s);
  };
  child.once('close', () => child.stdin!.destroy());
  return { child, terminate: () => signal('SIGTERM'), interrupt: () => signal('SIGINT'), kill: () => signal('SIGKILL') };
}
