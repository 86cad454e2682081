import { spawn } from 'node:child_process';
import { once } from 'node:events';

/** flock's exit code when the lock is taken (`-E`): one no program it runs would choose. */
const BUSY = 75;

/** A lock held on a file or directory; `release` gives it back and waits until it is free. */
export interface HeldLock {
  release(): Promise<void>;
}

/**
 * tryExclusiveLock takes the exclusive flock(2) lock on `target` (a file or a directory) if nobody
 * holds it, and returns undefined at once otherwise. It is the lock the sandboxed processes of
 * another user take with flock(1), so the two meet; Node has no flock of its own, so util-linux's
 * `flock` holds it, as long as its stdin is open: should this process die, the lock goes with it.
 */
export async function tryExclusiveLock(target: string): Promise<HeldLock | undefined> {
  const holder = spawn('flock', ['--nonblock', '--conflict-exit-code', String(BUSY), target, 'sh', '-c', 'echo held; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const exited = once(holder, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const held = new Promise<boolean>((resolve, reject) => {
    holder.stdout.once('data', () => resolve(true));
    holder.once('error', reject);
    exited.then(([code]) => (code === BUSY ? resolve(false) : reject(new Error(`flock ${target} exited with ${code}`))), reject);
  });
  if (!(await held)) return undefined;
  return {
    async release() {
      holder.stdin.end();
      await exited;
    },
  };
}
