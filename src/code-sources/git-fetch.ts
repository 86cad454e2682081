import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
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

/** The largest file a fetch may write: PLINTH_GIT_CACHE_MAX_BYTES, up to whole 512-byte blocks (`ulimit -f`'s unit). */
export function fetchFileLimit(maxBytes: number): number {
  return Math.ceil(maxBytes / 512) * 512;
}

/** The fetch's exit code when what it received was cut at PLINTH_GIT_CACHE_MAX_BYTES. */
export const FETCH_TOO_LARGE_EXIT = 3;

/** Why a fetch that exited with FETCH_TOO_LARGE_EXIT failed, as a step's error and a publish's 422 say it. */
export function fetchTooLargeReason(maxBytes: number): string {
  return `received more than PLINTH_GIT_CACHE_MAX_BYTES (${fetchFileLimit(maxBytes)} bytes) in one file`;
}

// umask 0: every file of the cache (FETCH_HEAD included, which --shared does not cover) stays writable
// by the next step's uid, which differs from this one's.
//
// The cache's size is bounded three ways, so that a repository cannot fill the host's disk through it:
// - `ulimit -f` (in 512-byte blocks) bounds every file the fetch writes;
// - fetch.unpackLimit=1 keeps what it receives in one pack (and its index) rather than up to a hundred
//   loose objects, and gc.auto=0 keeps git from exploding unreachable packs (a shallow cache has no
//   refs) into loose objects;
// - a cache already past the bound when a fetch starts is emptied first, under the lock, however busy
//   it is; a file cut at the bound has put it past. What an interrupted fetch left (objects/pack/tmp_*)
//   is removed before the next one.
// A file cut at the bound gets SIGXFSZ, which would dump a core of git's: `ulimit -c 0`.
const FETCH_SCRIPT = `set -eu
umask 0000
ulimit -c 0
ulimit -f "$PLINTH_GIT_MAX_BLOCKS" 2>/dev/null || true
cache=$PLINTH_GIT_CACHE
exec 9<"$cache"
flock -w 600 9
cd "$cache"
set -- $(du -sk .)
if [ "$1" -gt $((PLINTH_GIT_MAX_BLOCKS / 2)) ]; then
  echo "plinth: this code source's cache is larger than PLINTH_GIT_CACHE_MAX_BYTES: starting it afresh" >&2
  rm -rf -- ./* ./.[!.]* ./..?*
fi
[ -f HEAD ] || git init -q --bare --shared=0777 .
rm -f objects/pack/tmp_*
fetch() {
  git -c fetch.unpackLimit=1 -c gc.auto=0 -c maintenance.auto=false fetch -q --depth=1 --no-tags "$@" && return 0
  for cut in objects/pack/tmp_*; do
    if [ -f "$cut" ] && [ "$(wc -c <"$cut")" -ge $((PLINTH_GIT_MAX_BLOCKS * 512)) ]; then
      echo "plinth: the fetch was stopped: it received more than PLINTH_GIT_CACHE_MAX_BYTES ($((PLINTH_GIT_MAX_BLOCKS * 512)) bytes) in one file" >&2
      exit ${FETCH_TOO_LARGE_EXIT}
    fi
  done
  exit 1
}
if [ -n "$PLINTH_GIT_COMMIT" ]; then
  git cat-file -e "$PLINTH_GIT_COMMIT^{commit}" 2>/dev/null || fetch --no-write-fetch-head -- "$PLINTH_GIT_URL" "$PLINTH_GIT_COMMIT"
  git rev-parse --verify "$PLINTH_GIT_COMMIT^{commit}"
else
  fetch -- "$PLINTH_GIT_URL" "$PLINTH_GIT_REF"
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

export const cacheBind = (cacheDir: string, writable: boolean): GitBind => ({ source: cacheDir, target: GIT_CACHE_TARGET, writable });

export interface FetchRequest {
  cacheDir: string;
  url: string;
  credential: GitCredential | null;
  /** The ref to resolve (a branch, a tag, `HEAD`), when `commit` is empty. */
  ref: string;
  /** The commit to have in the cache; empty: resolve `ref`. */
  commit: string;
  /** PLINTH_GIT_CACHE_MAX_BYTES: the largest file the fetch may write. */
  maxBytes: number;
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
    PLINTH_GIT_MAX_BLOCKS: String(fetchFileLimit(request.maxBytes) / 512),
  });
  return { command: FETCH_SCRIPT, env, binds };
}
