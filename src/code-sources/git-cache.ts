// A code source's cache on a worker or API host (docs/git.md#the-cache): where it is, how a use marks
// it, and the room all caches of a host may take together.

import { execFile } from 'node:child_process';
import { chmod, lstat, mkdir, readdir, rm, utimes } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { sharedFileLock, tryDirectoryLock, tryFileLock, type HeldLock } from '../platform/file-lock.ts';
import type { GitConfig } from '../platform/git-config.ts';
import type { Logger } from '../platform/logger.ts';
import { ensurePrivateRoot, workDirectory } from '../platform/work-dirs.ts';

const execFileAsync = promisify(execFile);

/** What names a source's cache: a code source id, which holds nothing a path could misread. */
export const CACHE_NAME_PATTERN = /^[A-Za-z0-9_-]+$/;

/** The paths one `du` or `rm` is given: far below any system's limit on a command line's length. */
const PATHS_PER_COMMAND = 100;

/** How long one `du` or `rm` may take: a stalled file system must not hold the lock of making room. */
const COMMAND_TIMEOUT_MS = 300_000;

export type CacheSettings = Pick<GitConfig, 'cacheDir' | 'cacheTotalMaxBytes'>;

/** The directory of a host's caches: PLINTH_GIT_CACHE_DIR, else `<work root>/plinth-git-cache`. */
export function cacheRoot(git: Pick<GitConfig, 'cacheDir'>, workRoot: string | undefined): string {
  return git.cacheDir ?? workDirectory(workRoot, 'plinth-git-cache');
}

/** Where the use locks of a host's caches are: not a cache's name, so no sweep or measure takes it for one. */
const USES_DIR = '.uses';

/** Where the lock of making room is: one process of a host makes room at a time. */
const ROOM_LOCK = '.room';

/** How long a use waits for a cache being emptied under it: emptying takes a few `rm`s. */
const USE_WAIT_SECONDS = 600;

/** A use of a source's cache: its directory, held in use until `end`. */
export interface CacheUse {
  dir: string;
  end(): Promise<void>;
}

/**
 * useSourceCache begins a use of the source's cache on this host, made when missing:
 * `<PLINTH_GIT_CACHE_DIR>/<id>`, default `<work root>/plinth-git-cache/<id>`, under a root private to
 * the service's user. Every process that fetches a source (any worker's steps, the API's snapshots)
 * uses this one directory. A use marks the cache used now (its modification time), before any process
 * of it starts: the cache sweep (git-cache-sweep.ts) empties only caches left unused for
 * PLINTH_GIT_CACHE_IDLE_HOURS. Until `end`, it holds the cache's use lock (shared with the cache's
 * other uses), so that no process makes room by emptying it. Once marked, and again at `end`, it
 * makes room among the host's caches (makeRoom).
 */
export async function useSourceCache(git: CacheSettings, workRoot: string | undefined, codeSourceId: string, log: Logger): Promise<CacheUse> {
  if (!CACHE_NAME_PATTERN.test(codeSourceId)) throw new Error('The code source id cannot name a cache');
  const root = cacheRoot(git, workRoot);
  await ensurePrivateRoot(root);
  await makeUsesDir(root);
  const inUse = await sharedFileLock(useLockOf(root, codeSourceId), USE_WAIT_SECONDS);
  try {
    const dir = path.join(root, codeSourceId);
    await mkdir(dir, { recursive: true });
    // Each step runs as a uid of its own: any of them may fetch into the cache of a source its run uses.
    await chmod(dir, 0o777);
    const now = new Date();
    await utimes(dir, now, now);
    await makeRoomOnce(root, git, log);
    return {
      dir,
      // And once more as it ends: what it fetched counts from now on, should no other use come soon.
      end: async () => {
        await inUse.release();
        await makeRoomOnce(root, git, log);
      },
    };
  } catch (error) {
    await inUse.release();
    throw error;
  }
}

const useLockOf = (root: string, codeSourceId: string) => path.join(root, USES_DIR, codeSourceId);

/**
 * tryUseAlone takes the cache's use lock exclusively, unless a use holds it: while it is held, no use
 * of the cache begins (one that tries waits), so the cache may be emptied.
 */
export async function tryUseAlone(root: string, codeSourceId: string): Promise<HeldLock | undefined> {
  await makeUsesDir(root);
  return tryFileLock(useLockOf(root, codeSourceId));
}

/** The directory of the use locks, made when missing: a host's caches may predate it. */
const makeUsesDir = (root: string) => mkdir(path.join(root, USES_DIR), { mode: 0o700, recursive: true });

/**
 * whileUnused runs `work` on the cache while nobody uses it: under its use lock, taken exclusively (no
 * checkout or snapshot holds it, and one that begins meanwhile waits, then finds what `work` left),
 * and under the lock every fetch, extraction and archive takes on its directory. It returns undefined,
 * without running `work`, when either is held or the cache is gone.
 */
export async function whileUnused<T>(root: string, codeSourceId: string, work: (dir: string) => Promise<T>): Promise<T | undefined> {
  const alone = await tryUseAlone(root, codeSourceId);
  if (!alone) return undefined;
  try {
    const dir = path.join(root, codeSourceId);
    const lock = await tryDirectoryLock(dir).catch((error: NodeJS.ErrnoException) => {
      // Removed meanwhile, by another process's sweep: nothing is left to work on.
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (!lock) return undefined;
    try {
      return await work(dir);
    } finally {
      await lock.release();
    }
  } finally {
    await alone.release();
  }
}

/** Removes the use lock of a deleted source's cache, within whileUnused: no use of it begins again. */
export async function removeUseLock(root: string, codeSourceId: string): Promise<void> {
  await rm(useLockOf(root, codeSourceId), { force: true });
}

/**
 * Makes room unless another process of the host is making it already. It is the host's defence, not
 * the use's work: a failure of it is logged, and the use goes on.
 */
async function makeRoomOnce(root: string, git: CacheSettings, log: Logger): Promise<void> {
  try {
    const lock = await tryFileLock(path.join(root, ROOM_LOCK));
    if (!lock) return;
    try {
      await makeRoom(root, git, log);
    } finally {
      await lock.release();
    }
  } catch (error) {
    log.error({ err: error }, 'could not make room among the Git caches of this host');
  }
}

interface MeasuredCache {
  codeSourceId: string;
  dir: string;
  usedAt: number;
  bytes: number;
}

/**
 * makeRoom empties the host's least recently used caches until all of them together take at most
 * PLINTH_GIT_CACHE_TOTAL_MAX_BYTES, and returns the ids of those it emptied. A cache in use (its use
 * lock held, the calling use's own included, or its directory locked by a fetch, an extraction or an
 * archive) is left as it is.
 */
export async function makeRoom(root: string, git: CacheSettings, log: Logger): Promise<string[]> {
  const caches = await measureCaches(root, log);
  let total = caches.reduce((sum, cache) => sum + cache.bytes, 0);
  if (total <= git.cacheTotalMaxBytes) return [];
  const leastRecentlyUsed = [...caches].sort((a, b) => a.usedAt - b.usedAt);
  const emptied: string[] = [];
  for (const cache of leastRecentlyUsed) {
    if (total <= git.cacheTotalMaxBytes) break;
    try {
      if (!(await whileUnused(root, cache.codeSourceId, emptyIfNotEmpty))) continue;
    } catch (error) {
      log.warn({ err: error, codeSourceId: cache.codeSourceId }, 'could not empty a Git cache to make room');
      continue;
    }
    total -= cache.bytes;
    emptied.push(cache.codeSourceId);
    log.info({ codeSourceId: cache.codeSourceId, reason: 'room', bytes: cache.bytes }, 'emptied the Git cache of a code source');
  }
  if (total > git.cacheTotalMaxBytes) {
    log.warn({ bytes: total, maxBytes: git.cacheTotalMaxBytes }, 'the Git caches in use take more than PLINTH_GIT_CACHE_TOTAL_MAX_BYTES');
  }
  return emptied;
}

/** Empties `dir`, and says whether it held anything. */
async function emptyIfNotEmpty(dir: string): Promise<boolean> {
  if ((await readdir(dir)).length === 0) return false;
  await emptyDirectory(dir);
  return true;
}

/** Every cache of the root, with its size on disk and when it was last used. */
async function measureCaches(root: string, log: Logger): Promise<MeasuredCache[]> {
  const entries = await readdir(root, { withFileTypes: true });
  const names = entries.filter((e) => e.isDirectory() && CACHE_NAME_PATTERN.test(e.name)).map((e) => e.name);
  const caches: MeasuredCache[] = [];
  for (let i = 0; i < names.length; i += PATHS_PER_COMMAND) {
    const batch = names.slice(i, i + PATHS_PER_COMMAND).map((codeSourceId) => ({ codeSourceId, dir: path.join(root, codeSourceId) }));
    const sizes = await diskUsage(
      batch.map((c) => c.dir),
      log,
    );
    for (const { codeSourceId, dir } of batch) {
      const bytes = sizes.get(dir);
      const info = bytes === undefined ? undefined : await lstat(dir).catch(() => undefined);
      // Gone meanwhile (another process's sweep removed it): it takes no room.
      if (bytes !== undefined && info?.isDirectory()) caches.push({ codeSourceId, dir, usedAt: info.mtimeMs, bytes });
    }
  }
  return caches;
}

/**
 * The space each directory takes on disk, by coreutils' `du`, which reads no file's content and stays
 * on the directory's file system.
 */
async function diskUsage(dirs: string[], log: Logger): Promise<Map<string, number>> {
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync('du', ['-s', '-k', '-x', '--', ...dirs], { maxBuffer: 16 * 1024 * 1024, timeout: COMMAND_TIMEOUT_MS }));
  } catch (error) {
    // du exits 1 when it could not measure a path, as one a sweep removed while it walked: what it
    // measured of the others stands, and what it could not is logged.
    const failed = error as { code?: unknown; stdout?: unknown; stderr?: unknown };
    if (failed.code !== 1 || typeof failed.stdout !== 'string') throw error;
    log.warn({ stderr: String(failed.stderr).slice(0, 2000) }, 'du could not measure all Git caches of this host');
    stdout = failed.stdout;
  }
  const sizes = new Map<string, number>();
  for (const line of stdout.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab > 0) sizes.set(line.slice(tab + 1), Number(line.slice(0, tab)) * 1024);
  }
  return sizes;
}

/**
 * Removes everything in `dir` but `dir` itself, with coreutils' `rm`: unlike Node's recursive rm, it
 * never follows a link, even one swapped in while it walks, and does not stop at a tree deeper than
 * PATH_MAX.
 */
export async function emptyDirectory(dir: string): Promise<void> {
  const entries = (await readdir(dir)).map((name) => path.join(dir, name));
  for (let i = 0; i < entries.length; i += PATHS_PER_COMMAND) {
    await execFileAsync('rm', ['-rf', '--one-file-system', '--', ...entries.slice(i, i + PATHS_PER_COMMAND)], { timeout: COMMAND_TIMEOUT_MS });
  }
}
