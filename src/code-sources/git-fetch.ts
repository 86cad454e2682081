import type { EventEmitter } from 'node:events';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { GitConfig } from '../platform/git-config.ts';
import { ensurePrivateRoot, workDirectory } from '../platform/work-dirs.ts';
import { gitEnv, type GitCredential } from './git-remote.ts';

/**
 * The fetch of a code source into its cache, shared by a step's checkout (src/engine/runners/checkout.ts)
 * and a module snapshot (git-snapshot.ts): docs/git.md#the-checkout. It runs in a sandboxed process, the
 * only one given the credential, with the source's cache bind-mounted writable at GIT_CACHE_TARGET.
 * No git ever runs on the host against the cache: its content came from a tenant's repository.
 */

/** Where a sandboxed process sees the source's cache. */
export const GIT_CACHE_TARGET = '/plinth/git-cache';

/** A branch, tag or commit: no option (`-x`), no refspec (`a:b`, `+a`), nothing git would read otherwise. */
export const REF_PATTERN = /^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,255}$/;

/** A full commit id: fetched by id (and not again when the cache has it), not resolved as a ref. */
export const COMMIT_PATTERN = /^[0-9a-f]{40}$/;

// umask 0: every file of the cache (FETCH_HEAD included, which --shared does not cover) stays writable
// by the next step's uid, which differs from this one's.
const FETCH_SCRIPT = `set -eu
umask 0000
cache=$PLINTH_GIT_CACHE
exec 9<"$cache"
flock -w 600 9
[ -f "$cache/HEAD" ] || git init -q --bare --shared=0777 "$cache"
cd "$cache"
if [ -n "$PLINTH_GIT_COMMIT" ]; then
  git cat-file -e "$PLINTH_GIT_COMMIT^{commit}" 2>/dev/null || git fetch -q --depth=1 --no-tags --no-write-fetch-head -- "$PLINTH_GIT_URL" "$PLINTH_GIT_COMMIT"
  git rev-parse --verify "$PLINTH_GIT_COMMIT^{commit}"
else
  git fetch -q --depth=1 --no-tags -- "$PLINTH_GIT_URL" "$PLINTH_GIT_REF"
  git rev-parse --verify "FETCH_HEAD^{commit}"
fi
`;

/**
 * What the fetch needs of a sandboxed workspace. The engine's StepWorkspace (src/engine/sandbox) is
 * one; it is restated here because the engine imports code-sources, never the other way round.
 */
export interface GitBind {
  source: string;
  target: string;
  writable: boolean;
}

export interface GitProcessSpec {
  command: string;
  env: Record<string, string>;
  binds?: GitBind[];
}

export interface GitProcess {
  readonly child: EventEmitter & { readonly pid?: number | undefined; readonly stdout: Readable | null; readonly stderr: Readable | null };
  kill(): void;
}

export interface GitWorkspace {
  spawn(spec: GitProcessSpec): Promise<GitProcess>;
  pathOf(target: string, binds: readonly GitBind[]): string;
  dispose(): Promise<void>;
}

/**
 * sourceCacheDir is the source's cache on this host, made when missing: `<PLINTH_GIT_CACHE_DIR>/<id>`,
 * default `<work root>/plinth-git-cache/<id>`, under a root private to the service's user. Every
 * process that fetches a source (any worker's steps, the API's snapshots) uses this one directory.
 */
export async function sourceCacheDir(git: GitConfig, workRoot: string | undefined, codeSourceId: string): Promise<string> {
  if (!/^[A-Za-z0-9_-]+$/.test(codeSourceId)) throw new Error('The code source id cannot name a cache');
  const root = git.cacheDir ?? workDirectory(workRoot, 'plinth-git-cache');
  await ensurePrivateRoot(root);
  const dir = path.join(root, codeSourceId);
  await mkdir(dir, { recursive: true });
  // Each step runs as a uid of its own: any of them may fetch into the cache of a source its run uses.
  await chmod(dir, 0o777);
  return dir;
}

export const cacheBind = (cacheDir: string, writable: boolean): GitBind => ({ source: cacheDir, target: GIT_CACHE_TARGET, writable });

export interface FetchRequest {
  cacheDir: string;
  url: string;
  credential: GitCredential | null;
  /** The ref to resolve (a branch, a tag, `HEAD`), when `commit` is empty. */
  ref: string;
  /** The commit to have in the cache; empty: resolve `ref`. */
  commit: string;
}

/**
 * fetchProcess is the process that fetches, under a lock on the cache, shallow, only the one commit it
 * needs (the commit, else the ref's head) and prints that commit's id. It alone gets the credential,
 * in its environment (gitEnv).
 */
export function fetchProcess(workspace: Pick<GitWorkspace, 'pathOf'>, request: FetchRequest): GitProcessSpec {
  const binds = [cacheBind(request.cacheDir, true)];
  const env = gitEnv(request.credential, {
    PLINTH_GIT_CACHE: workspace.pathOf(GIT_CACHE_TARGET, binds),
    PLINTH_GIT_URL: request.url,
    PLINTH_GIT_REF: request.ref,
    PLINTH_GIT_COMMIT: request.commit,
  });
  return { command: FETCH_SCRIPT, env, binds };
}
