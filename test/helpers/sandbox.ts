import { once } from 'node:events';
import type { StepProcessSpec, StepWorkspace } from '../../src/engine/sandbox/sandbox.ts';

/**
 * The command name of a sandbox's top process (util-linux `unshare`, started by the worker's spawner),
 * and of the root init it forks as pid 1 of the step's PID namespace (a shell that, its sandbox
 * built, becomes `unshare --fork`, the step shell's parent).
 */
export const isSandboxTop = (comm: string) => comm === 'unshare';
export const isSandboxInit = (comm: string) => comm === 'unshare';

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
