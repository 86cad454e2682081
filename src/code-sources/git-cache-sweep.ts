import type { Dirent } from 'node:fs';
import { lstat, readdir, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../platform/db/db.ts';
import { Every } from '../platform/every.ts';
import { tryExclusiveLock } from '../platform/file-lock.ts';
import type { GitConfig } from '../platform/git-config.ts';
import type { Logger } from '../platform/logger.ts';
import { existingCodeSourceIds } from './code-sources.repo.ts';
import { CACHE_NAME_PATTERN, cacheRoot } from './git-fetch.ts';

/** How often each process sweeps its host's caches. */
export const SWEEP_EVERY_MS = 10 * 60_000;

/** The ids one query checks. */
const IDS_PER_QUERY = 500;

/** Why a cache is emptied: its code source is gone, nobody used it for a while, or it grew too large. */
export type CacheRemoval = 'deleted' | 'idle' | 'too large';

export interface SweptCache {
  codeSourceId: string;
  reason: CacheRemoval;
  /** What it held on disk. */
  bytes: number;
}

/**
 * GitCacheSweeper keeps a host's Git caches (docs/git.md#the-cache) from growing without end. Each
 * sweep empties the cache of a source that no longer exists, one nobody has used for
 * PLINTH_GIT_CACHE_IDLE_HOURS, and one larger than PLINTH_GIT_CACHE_MAX_BYTES; the next fetch of a
 * live source starts it again. A cache is emptied in place while the sweep holds the lock every fetch
 * takes on it, never while a fetch runs; a fetch waiting for that lock then finds it empty and starts
 * it afresh. Only a deleted source's directory itself is removed.
 *
 * Nothing of a cache is read on the host but its directory tree's sizes: its content is a tenant's.
 */
export class GitCacheSweeper {
  private readonly every: Every;
  private readonly root: string;

  constructor(
    private readonly db: Db,
    private readonly git: Pick<GitConfig, 'cacheDir' | 'cacheIdleHours' | 'cacheMaxBytes'>,
    workRoot: string | undefined,
    private readonly log: Logger,
  ) {
    this.root = cacheRoot(git, workRoot);
    this.every = new Every(SWEEP_EVERY_MS, () => this.sweepOnce(), log, 'sweeping the Git caches failed');
  }

  start(): void {
    this.every.start();
  }

  stop(): Promise<void> {
    return this.every.stop();
  }

  /** One sweep of the host's caches: what it emptied. */
  async sweepOnce(now = Date.now()): Promise<SweptCache[]> {
    const names = await this.cacheNames();
    const existing = new Set<string>();
    for (let i = 0; i < names.length; i += IDS_PER_QUERY) {
      for (const id of await existingCodeSourceIds(this.db, names.slice(i, i + IDS_PER_QUERY))) existing.add(id);
    }
    const swept: SweptCache[] = [];
    for (const name of names) {
      try {
        const done = await this.tidy(name, existing.has(name), now);
        if (done) swept.push(done);
      } catch (error) {
        // Another process of the host swept it first; anything else is logged, and the sweep goes on.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ err: error, codeSourceId: name }, 'could not sweep a Git cache');
      }
    }
    return swept;
  }

  private async cacheNames(): Promise<string[]> {
    let entries: Dirent[];
    try {
      entries = await readdir(this.root, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    return entries.filter((e) => e.isDirectory() && CACHE_NAME_PATTERN.test(e.name)).map((e) => e.name);
  }

  private async tidy(codeSourceId: string, exists: boolean, now: number): Promise<SweptCache | undefined> {
    const dir = path.join(this.root, codeSourceId);
    if (!(await this.reasonToEmpty(dir, exists, now))) return undefined;
    const lock = await tryExclusiveLock(dir);
    // A fetch holds it: the cache is in use, and the next sweep looks again.
    if (!lock) return undefined;
    try {
      // Looked at again under the lock: a use may have begun since (each marks the directory first).
      const reason = await this.reasonToEmpty(dir, exists, now);
      if (!reason) return undefined;
      const bytes = await diskUsage(dir);
      await emptyDirectory(dir);
      if (reason === 'deleted') await rmdir(dir);
      this.log.info({ codeSourceId, reason, bytes }, 'emptied the Git cache of a code source');
      return { codeSourceId, reason, bytes };
    } finally {
      await lock.release();
    }
  }

  private async reasonToEmpty(dir: string, exists: boolean, now: number): Promise<CacheRemoval | undefined> {
    // Also before the lock, which flock(1) would otherwise make as a file where another sweep removed the directory.
    const info = await lstat(dir);
    if (!info.isDirectory()) return undefined;
    if (!exists) return 'deleted';
    if (now - info.mtimeMs >= this.git.cacheIdleHours * 3_600_000) return (await isEmpty(dir)) ? undefined : 'idle';
    if ((await diskUsage(dir)) > this.git.cacheMaxBytes) return 'too large';
    return undefined;
  }
}

async function isEmpty(dir: string): Promise<boolean> {
  return (await readdir(dir)).length === 0;
}

/** The bytes a directory's tree takes on disk, links not followed. */
export async function diskUsage(dir: string): Promise<number> {
  let bytes = 0;
  const pending = [dir];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    for (const entry of await readdir(next, { withFileTypes: true })) {
      const at = path.join(next, entry.name);
      if (entry.isDirectory()) pending.push(at);
      bytes += (await lstat(at)).blocks * 512;
    }
  }
  return bytes;
}

/** Removes everything in `dir` but `dir` itself; links are removed, never followed. */
async function emptyDirectory(dir: string): Promise<void> {
  for (const name of await readdir(dir)) await rm(path.join(dir, name), { recursive: true, force: true });
}
