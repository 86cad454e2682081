import type { Dirent } from 'node:fs';
import { lstat, readdir, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../platform/db/db.ts';
import { Every } from '../platform/every.ts';
import type { GitConfig } from '../platform/git-config.ts';
import type { Logger } from '../platform/logger.ts';
import { ensurePrivateRoot } from '../platform/work-dirs.ts';
import { existingCodeSourceIds } from './code-sources.repo.ts';
import { CACHE_NAME_PATTERN, cacheRoot, emptyDirectory, removeUseLock, whileUnused } from './git-cache.ts';

/** How often each process sweeps its host's caches. */
export const SWEEP_EVERY_MS = 10 * 60_000;

/** The ids one query checks: a host may hold the caches of many thousand sources. */
const IDS_PER_QUERY = 500;

/**
 * How long a deleted source's cache must have gone unused before it goes: a cache that is in use
 * belongs to a source that exists somewhere, such as in the database of another installation that,
 * against the docs, shares this work root.
 */
const DELETED_IDLE_MS = 3_600_000;

/** Why a cache is emptied: its code source is gone, or nobody used it for a while. */
export type CacheRemoval = 'deleted' | 'idle';

export interface SweptCache {
  codeSourceId: string;
  reason: CacheRemoval;
}

/**
 * GitCacheSweeper keeps a host's Git caches (docs/git.md#the-cache) from outliving their use: each
 * sweep empties the cache of a source that no longer exists (once unused for an hour) and one nobody
 * has used for PLINTH_GIT_CACHE_IDLE_HOURS; the next fetch of a live source starts it again. (A cache
 * past PLINTH_GIT_CACHE_MAX_BYTES is emptied by its next fetch, however busy it is; room among all the
 * caches is made at each use, by makeRoom in git-cache.ts.) A cache is emptied in place, and only
 * while the sweep holds both its use lock (no checkout or snapshot holds it, and none begins) and the
 * lock every fetch, extraction and archive takes on its directory. Only a deleted source's directory
 * itself is removed, with its use lock.
 *
 * Nothing of a cache's content, a tenant's, is read on the host: coreutils' `rm`, which never follows
 * a link and walks a tree of any depth, deletes it.
 */
export class GitCacheSweeper {
  private readonly every: Every;
  private readonly root: string;

  constructor(
    private readonly db: Db,
    private readonly git: Pick<GitConfig, 'cacheDir' | 'cacheIdleHours'>,
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
        const done = await this.emptyIfUnused(name, existing.has(name), now);
        if (done) swept.push(done);
      } catch (error) {
        if (!sweptMeanwhile(error)) this.log.warn({ err: error, codeSourceId: name }, 'could not sweep a Git cache');
      }
    }
    return swept;
  }

  /** The caches of the root, after checking the root is still this service's own (0700, not a link). */
  private async cacheNames(): Promise<string[]> {
    try {
      await lstat(this.root);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    await ensurePrivateRoot(this.root);
    const entries: Dirent[] = await readdir(this.root, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && CACHE_NAME_PATTERN.test(e.name)).map((e) => e.name);
  }

  private async emptyIfUnused(codeSourceId: string, exists: boolean, now: number): Promise<SweptCache | undefined> {
    const dir = path.join(this.root, codeSourceId);
    if (!(await this.reasonToEmpty(dir, exists, now))) return undefined;
    // A checkout or a snapshot holds it, or a fetch, an extraction or an archive: the cache is in use,
    // and the next sweep looks again.
    return whileUnused(this.root, codeSourceId, async () => {
      // Looked at again under the locks: a use may have begun since (each marks the directory first).
      const reason = await this.reasonToEmpty(dir, exists, now);
      if (!reason) return undefined;
      await emptyDirectory(dir);
      if (reason === 'deleted') {
        await rmdir(dir);
        await removeUseLock(this.root, codeSourceId);
      }
      this.log.info({ codeSourceId, reason }, 'emptied the Git cache of a code source');
      return { codeSourceId, reason };
    });
  }

  private async reasonToEmpty(dir: string, exists: boolean, now: number): Promise<CacheRemoval | undefined> {
    const info = await lstat(dir);
    if (!info.isDirectory()) return undefined;
    const unusedMs = now - info.mtimeMs;
    if (!exists) return unusedMs >= DELETED_IDLE_MS ? 'deleted' : undefined;
    if (unusedMs >= this.git.cacheIdleHours * 3_600_000 && (await readdir(dir)).length > 0) return 'idle';
    return undefined;
  }
}

/** Another process of the host removed the cache first (and not: `flock` or `rm` is missing). */
function sweptMeanwhile(error: unknown): boolean {
  const { code, syscall } = error as NodeJS.ErrnoException;
  return code === 'ENOENT' && !syscall?.startsWith('spawn');
}
