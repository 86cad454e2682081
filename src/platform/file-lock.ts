import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** flock's exit code when the lock is taken (`-E`): one no other failure of it gives. */
const BUSY = 75;

/** A lock held on a directory or a lock file; `release` gives it back. */
export interface HeldLock {
  release(): Promise<void>;
}

/**
 * tryDirectoryLock takes the exclusive flock(2) lock on the directory `dir` if nobody holds it, and
 * returns undefined at once otherwise. It is the lock the sandboxed processes of another user take
 * with flock(1), so the two meet.
 *
 * Node has no flock of its own: this process opens the directory (never following a link, never
 * making anything where it is missing) and util-linux's `flock` locks that descriptor, which it shares
 * with the child. The lock belongs to the open descriptor, so it is held until this process closes it,
 * or dies.
 */
export function tryDirectoryLock(dir: string): Promise<HeldLock | undefined> {
  return lockOpened(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW, ['--nonblock']);
}

/** tryFileLock is tryDirectoryLock for a lock file of this process's own, made (0600) when missing. */
export function tryFileLock(file: string): Promise<HeldLock | undefined> {
  return lockOpened(file, LOCK_FILE_FLAGS, ['--nonblock']);
}

/**
 * sharedFileLock takes the shared lock on a lock file of this process's own (made when missing), which
 * any number of holders share: it waits while another holds it exclusively, up to `waitSeconds`.
 */
export async function sharedFileLock(file: string, waitSeconds: number): Promise<HeldLock> {
  const lock = await lockOpened(file, LOCK_FILE_FLAGS, ['--shared', '--wait', String(waitSeconds)]);
  if (!lock) throw new Error(`${file} was held for longer than ${waitSeconds} s`);
  return lock;
}

/** A lock file is never opened through a link, and only its owner may read it. */
const LOCK_FILE_FLAGS = constants.O_RDONLY | constants.O_CREAT | constants.O_NOFOLLOW;

async function lockOpened(target: string, flags: number, how: string[]): Promise<HeldLock | undefined> {
  const handle = await open(target, flags, 0o600);
  try {
    const locker = spawn('flock', [...how, '--conflict-exit-code', String(BUSY), '3'], { stdio: ['ignore', 'ignore', 'ignore', handle.fd] });
    const [code] = (await once(locker, 'exit')) as [number | null];
    if (code === BUSY) {
      await handle.close();
      return undefined;
    }
    if (code !== 0) throw new Error(`flock ${target} exited with ${code}`);
  } catch (error) {
    await handle.close();
    throw error;
  }
  return { release: () => handle.close() };
}
