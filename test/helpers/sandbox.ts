import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { StepProcessSpec, StepWorkspace } from '../../src/engine/sandbox/sandbox.ts';

/**
 * The command name of the sandbox's own processes: its top (util-linux `unshare`, started by the
 * worker's spawner), the init it forks (a shell that, its sandbox built, becomes `unshare`) and the
 * step's PID namespace's pid 1 (`unshare --fork`, the step shell's parent).
 */
export const isSandboxMachinery = (comm: string) => comm === 'unshare';

/** Whether these tests (and the workers they start) run as a normal user: sandboxes are then rootless. */
export { ROOTLESS } from '../../src/engine/sandbox/sandbox.ts';

/**
 * The uid a host process sees itself as: its host uid, or inside a user namespace (a rootless step)
 * the uid that one maps to it. A step is its sandbox uid either way; undefined once it has exited.
 */
export function ownUid(pid: number, hostUid: number): number | undefined {
  try {
    for (const line of readFileSync(`/proc/${pid}/uid_map`, 'utf8').trim().split('\n')) {
      const [inside, outside, count] = line.trim().split(/\s+/).map(Number);
      if (hostUid >= outside && hostUid < outside + count) return inside + (hostUid - outside);
    }
  } catch {
    return undefined;
  }
  return undefined;
}

export const STEP_TEST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Runs one process of a workspace to its end and returns its exit code and output (stdout and stderr together). */
export async function runInWorkspace(workspace: StepWorkspace, command: string, spec: Partial<StepProcessSpec> = {}) {
  const proc = await workspace.spawn({ command, env: { PATH: STEP_TEST_PATH }, ...spec });
  let output = '';
  proc.child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  proc.child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const [code] = await once(proc.child, 'close');
  return { code: code as number | null, output };
}
