import path from 'node:path';
import type { Db } from '../platform/db/db.ts';
import { AppError } from '../platform/errors.ts';
import type { GitConfig } from '../platform/git-config.ts';
import type { Logger } from '../platform/logger.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import type { CodeSourceRow } from './code-sources.repo.ts';
import { gitCredential } from './credentials.ts';
import { useSourceCache } from './git-cache.ts';
import {
  cacheBind,
  COMMIT_PATTERN,
  FETCH_TOO_LARGE_EXIT,
  fetchTooLargeReason,
  fetchProcess,
  GIT_CACHE_TARGET,
  REF_PATTERN,
  type GitProcess,
  type GitProcessSpec,
  type GitWorkspace,
} from './git-fetch.ts';
import { gitEnv, type GitCredential } from './git-remote.ts';

/**
 * A snapshot of one directory of a code source at one commit: what a module version keeps
 * (docs/git.md#snapshots-of-a-directory-module-versions). Two sandboxed processes, as in a step's
 * checkout, into the same per-source cache:
 *
 * 1. the fetch (git-fetch.ts), the only one given the credential, resolves the ref to a commit;
 * 2. the archive, credential-free with the cache read-only, checks `<commit>:<path>` is a tree and
 *    writes `git archive --format=tar.gz` of it to stdout, read here up to PLINTH_MODULE_ARCHIVE_MAX_BYTES.
 *
 * The host only ever holds the archive's bytes: no git or tar runs on it against tenant content.
 */

export interface SourceSnapshot {
  commitSha: string;
  /** A .tar.gz of the directory's content, its paths relative to the directory. */
  archive: Buffer;
}

/** The sandbox snapshots run in: the engine's OnDemandSandbox (src/engine/sandbox/on-demand.ts) is one. */
export interface SnapshotSandbox {
  /** The work root whose Git caches the workers of this host share. */
  readonly workRoot: string | undefined;
  /** Throws an error whose `code` is `Engine:Sandbox:UNAVAILABLE` when nothing can run isolated here. */
  open(): Promise<GitWorkspace>;
}

/** Made once by the API process: `{db, secrets, git: config.git, log, sandbox: OnDemandSandbox.fromEnv(process.env, log)}`. */
export interface SnapshotDeps {
  db: Db;
  secrets: SecretBox;
  /** The fetch's timeout (PLINTH_GIT_FETCH_TIMEOUT_MS), the cache, the archive bound, what mints credentials. */
  git: GitConfig;
  sandbox: SnapshotSandbox;
  log: Logger;
}

/** Exit codes of ARCHIVE_SCRIPT's own refusals. */
const NO_SUCH_PATH = 3;
const NOT_A_TREE = 4;

// The shared lock keeps a fetch from emptying the cache (when it passed its bound) while this reads it.
const ARCHIVE_SCRIPT = `set -eu
exec 9<"$PLINTH_GIT_CACHE"
flock -s -w 600 9
if [ -n "$PLINTH_GIT_PATH" ]; then tree="$PLINTH_GIT_COMMIT:$PLINTH_GIT_PATH"; else tree="$PLINTH_GIT_COMMIT^{tree}"; fi
kind=$(git --git-dir="$PLINTH_GIT_CACHE" cat-file -t "$tree" 2>/dev/null) || exit ${NO_SUCH_PATH}
[ "$kind" = tree ] || exit ${NOT_A_TREE}
exec git --git-dir="$PLINTH_GIT_CACHE" archive --format=tar.gz "$tree"
`;

/** A ref or path as a message shows it: quoted, escaped, and cut short (it is the caller's input). */
const quoted = (text: string) => JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);

/** The most of the fetch's stdout (a commit id) and of either process's stderr kept. */
const SMALL_OUTPUT = 8192;

/**
 * snapshotSource resolves `ref` (a branch, a tag, a full commit id) of the source to a commit and
 * returns that commit's `dir` (a relative path; empty: the repository's root) as a .tar.gz. Everything
 * it refuses is an AppError naming the ref or path, never the credential.
 */
export async function snapshotSource(deps: SnapshotDeps, source: CodeSourceRow, ref: string, dir: string): Promise<SourceSnapshot> {
  if (!REF_PATTERN.test(ref)) throw new AppError(422, 'Git:Ref:INVALID', `${quoted(ref)} is not a branch, tag or commit name`);
  const treePath = repositoryPath(dir);
  const workspace = await openWorkspace(deps);
  try {
    const credential = await gitCredential(deps.db, deps.secrets, deps.git, source);
    const cache = await useSourceCache(deps.git, deps.sandbox.workRoot, source.id, deps.log);
    try {
      const commitSha = await fetchCommit(deps, workspace, { source, ref, cacheDir: cache.dir, credential });
      const archive = await archiveTree(deps, workspace, { cacheDir: cache.dir, commitSha, treePath, ref });
      return { commitSha, archive };
    } finally {
      await cache.end();
    }
  } finally {
    await workspace.dispose();
  }
}

/**
 * repositoryPath normalizes a directory of the repository (`./a//b/` is `a/b`, `` and `.` the root) and
 * refuses one that is absolute, climbs (`..` anywhere), or holds a control character.
 */
export function repositoryPath(dir: string): string {
  const invalid = (why: string) => new AppError(422, 'Git:Path:INVALID', `The path ${quoted(dir)} ${why}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(dir) || dir.length > 4096) throw invalid('holds a character a repository path cannot');
  if (dir.startsWith('/')) throw invalid('is absolute: give it relative to the repository root');
  if (dir.split('/').includes('..')) throw invalid('leaves the repository');
  const normal = path.posix.normalize(dir === '' ? '.' : dir).replace(/\/+$/, '');
  return normal === '.' ? '' : normal;
}

async function openWorkspace(deps: SnapshotDeps): Promise<GitWorkspace> {
  try {
    return await deps.sandbox.open();
  } catch (error) {
    const unavailable = (error as { code?: unknown }).code === 'Engine:Sandbox:UNAVAILABLE';
    if (!unavailable) deps.log.error({ err: error }, 'could not open a sandbox for a code source snapshot');
    throw new AppError(
      503,
      'Git:Sandbox:UNAVAILABLE',
      unavailable ? (error as Error).message : 'No sandbox could be opened for the git processes of the snapshot',
    );
  }
}

interface FetchInput {
  source: CodeSourceRow;
  ref: string;
  cacheDir: string;
  credential: GitCredential | null;
}

async function fetchCommit(deps: SnapshotDeps, workspace: GitWorkspace, { source, ref, cacheDir, credential }: FetchInput): Promise<string> {
  const commit = COMMIT_PATTERN.test(ref) ? ref : '';
  const spec = fetchProcess(workspace, { cacheDir, url: source.url, credential, ref, commit, maxBytes: deps.git.cacheMaxBytes });
  const fetched = await runBounded(workspace, spec, SMALL_OUTPUT, deps.git.fetchTimeoutMs, deps.log);
  const commitSha = fetched.stdout.toString('utf8').trim();
  if (fetched.timedOut)
    throw new AppError(504, 'Git:Fetch:TIMEOUT', `Fetching ${quoted(ref)} took longer than ${deps.git.fetchTimeoutMs} ms (PLINTH_GIT_FETCH_TIMEOUT_MS)`);
  if (fetched.code === 0 && COMMIT_PATTERN.test(commitSha)) return commitSha;
  if (fetched.code === FETCH_TOO_LARGE_EXIT) {
    throw new AppError(422, 'Git:Fetch:TOO_LARGE', `The fetch of ${quoted(ref)} ${fetchTooLargeReason(deps.git.cacheMaxBytes)}`);
  }
  deps.log.info(
    { codeSourceId: source.id, ref, exit: fetched.code, git: redacted(fetched.stderr, credential) },
    'fetch of a code source for a snapshot failed',
  );
  throw fetchError(fetched.stderr, ref);
}

/** What git's message says went wrong; git writes it in English (its environment sets no locale). */
function fetchError(stderr: string, ref: string): AppError {
  if (/couldn't find remote ref|not our ref|unadvertised object|no such remote ref|bad object|unable to parse/i.test(stderr))
    return new AppError(422, 'Git:Ref:NOT_FOUND', `The repository has no branch, tag or commit ${quoted(ref)}`);
  if (/authentication failed|could not read (username|password)|returned error: 401/i.test(stderr))
    return new AppError(422, 'Git:Credential:REFUSED', "The Git server refused the code source's credential (or the repository needs one and none is set)");
  if (/repository .*not found|returned error: 404/i.test(stderr))
    return new AppError(422, 'Git:Repository:NOT_FOUND', "The Git server has no repository at the code source's URL");
  return new AppError(
    502,
    'Git:Fetch:FAILED',
    `Fetching ${quoted(ref)} from the code source's URL failed: the server is unreachable, refused the fetch, or is not allowed by the outbound policy (PLINTH_STEP_EGRESS_ALLOW)`,
  );
}

interface ArchiveInput {
  cacheDir: string;
  commitSha: string;
  treePath: string;
  ref: string;
}

async function archiveTree(deps: SnapshotDeps, workspace: GitWorkspace, { cacheDir, commitSha, treePath, ref }: ArchiveInput): Promise<Buffer> {
  const binds = [cacheBind(cacheDir, false)];
  const env = gitEnv(null, { PLINTH_GIT_CACHE: workspace.pathOf(GIT_CACHE_TARGET, binds), PLINTH_GIT_COMMIT: commitSha, PLINTH_GIT_PATH: treePath });
  const limit = deps.git.snapshotMaxBytes;
  const archived = await runBounded(workspace, { command: ARCHIVE_SCRIPT, env, binds }, limit, deps.git.fetchTimeoutMs, deps.log);
  const shown = treePath ? quoted(treePath) : 'the repository root';
  if (archived.overflow)
    throw new AppError(422, 'Git:Archive:TOO_LARGE', `The archive of ${shown} at ${commitSha} is larger than ${limit} bytes (PLINTH_MODULE_ARCHIVE_MAX_BYTES)`);
  if (archived.timedOut)
    throw new AppError(
      504,
      'Git:Fetch:TIMEOUT',
      `Archiving ${shown} at ${commitSha} took longer than ${deps.git.fetchTimeoutMs} ms (PLINTH_GIT_FETCH_TIMEOUT_MS)`,
    );
  if (archived.code === NO_SUCH_PATH) throw new AppError(422, 'Git:Path:NOT_FOUND', `${quoted(ref)} (${commitSha}) has no path ${quoted(treePath)}`);
  if (archived.code === NOT_A_TREE)
    throw new AppError(422, 'Git:Path:NOT_A_DIRECTORY', `${quoted(treePath)} at ${quoted(ref)} (${commitSha}) is not a directory`);
  if (archived.code !== 0) {
    deps.log.warn({ commitSha, exit: archived.code, git: archived.stderr }, 'archive of a code source for a snapshot failed');
    throw new AppError(502, 'Git:Fetch:FAILED', `Archiving ${shown} at ${commitSha} failed`);
  }
  return archived.stdout;
}

interface Finished {
  /** Exit code; null when it was killed (or could not start). */
  code: number | null;
  stdout: Buffer;
  stderr: string;
  timedOut: boolean;
  /** Its stdout went past the bound: it was killed, and `stdout` holds only what came before. */
  overflow: boolean;
}

/**
 * runBounded runs one sandboxed process to its end, keeping at most `maxStdout` bytes of its stdout
 * (past that it is killed: a hostile repository cannot make this process hold more) and the start of its
 * stderr; it is killed after `timeoutMs`.
 */
async function runBounded(workspace: GitWorkspace, spec: GitProcessSpec, maxStdout: number, timeoutMs: number, log: Logger): Promise<Finished> {
  let proc: GitProcess;
  try {
    proc = await workspace.spawn(spec);
  } catch (error) {
    log.error({ err: error }, 'could not start a git process of a code source snapshot');
    throw new AppError(503, 'Git:Sandbox:UNAVAILABLE', 'The sandbox could not start the git processes of the snapshot');
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let overflow = false;
    let timedOut = false;
    proc.child.stdout!.on('data', (chunk: Buffer) => {
      if (overflow) return;
      size += chunk.length;
      if (size > maxStdout) {
        overflow = true;
        chunks.length = 0;
        proc.kill();
      } else chunks.push(chunk);
    });
    proc.child.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.length < SMALL_OUTPUT) stderr = (stderr + chunk.toString('utf8')).slice(0, SMALL_OUTPUT);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill();
    }, timeoutMs);
    const finish = (code: number | null) => {
      clearTimeout(timer);
      proc.kill();
      resolve({ code, stdout: Buffer.concat(chunks), stderr, timedOut, overflow });
    };
    proc.child.once('error', (error: Error) => {
      stderr += `could not start: ${error.message}`;
      finish(null);
    });
    proc.child.once('close', (code: number | null) => finish(code));
  });
}

/** git never writes the credential (it is a header from the environment); should a server echo it, it is cut. */
function redacted(text: string, credential: GitCredential | null): string {
  if (!credential?.password) return text;
  return text.split(credential.password).join('[redacted]');
}
