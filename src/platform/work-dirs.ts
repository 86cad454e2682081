import { chmod, lstat, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** PLINTH_WORKER_WORK_ROOT: the directory a host's workers and API keep their sandboxes and Git caches in; unset: the OS temp directory. */
export function workRootFrom(env: NodeJS.ProcessEnv): string | undefined {
  return env.PLINTH_WORKER_WORK_ROOT || undefined;
}

/**
 * workDirectory is where a Plinth process keeps `name` (its sandboxes, its Git cache): under
 * PLINTH_WORKER_WORK_ROOT, else in the OS temp directory with the service user's uid in the name, so
 * services of different users on one host never meet in one directory (each must own its own).
 */
export function workDirectory(workRoot: string | undefined, name: string): string {
  return workRoot ? path.join(workRoot, name) : path.join(os.tmpdir(), `${name}-${process.getuid?.() ?? 0}`);
}

/**
 * ensurePrivateRoot makes the directory that holds every workspace: owned by the service's user, mode
 * 0700, and not a symlink, so no other user of the host can list, enter or swap it.
 */
export async function ensurePrivateRoot(root: string): Promise<void> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  const info = await lstat(root);
  if (!info.isDirectory() || info.uid !== process.getuid?.()) throw new Error(`${root} must be a directory owned by the service's user`);
  await chmod(root, 0o700);
}
