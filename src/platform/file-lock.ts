import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** flock's exit code when the lock is taken (`-E`): one no other failure of it gives. */
const BUSY = 75;

/** A lock held on a directory; `release` gives it back. */
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
export async function tryDirectoryLock(dir: string): Promise<HeldLock | undefined> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    const locker = spawn('flock', ['--nonblock', '--conflict-exit-code', String(BUSY), '3'], { stdio: ['ignore', 'ignore', 'ignore', handle.fd] });
    const [code] = (await once(locker, 'exit')) as [number | null];
    if (code === BUSY) {
      await handle.close();
      return undefined;
    }
    if (code !== 0) throw new Error(`flock ${dir} exited with ${code}`);
  } catch (error) {
    await handle.close();
    throw error;
  }
  return { release: () => handle.close() };
}
