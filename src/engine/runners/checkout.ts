import path from 'node:path';
import { gitCredential } from '../../code-sources/credentials.ts';
import { findCodeSourceOfStack, type CodeSourceRow } from '../../code-sources/code-sources.repo.ts';
import { CACHE_NAME_PATTERN, useSourceCache } from '../../code-sources/git-cache.ts';
import { gitEnv, type GitCredential } from '../../code-sources/git-remote.ts';
import { cacheBind, FETCH_TOO_LARGE_EXIT, fetchTooLargeReason, fetchProcess, GIT_CACHE_TARGET, REF_PATTERN } from '../../code-sources/git-fetch.ts';
import { AppError } from '../../platform/errors.ts';
import { withRetries } from '../../platform/db/retry.ts';
import { engineError } from '../engine-errors.ts';
import { recordRunCommit } from '../run-commit.repo.ts';
import type { StepWorkspace } from '../sandbox/index.ts';
import { relativeWorkingDirectory } from '../sandbox/workspaces.ts';
import type { ClaimedStep, StepOutcome } from '../step-lifecycle.ts';
import type { StepCheckout } from './prepared-step.ts';
import type { RunnerContext } from './index.ts';

/**
 * The checkout of a stack's source into a step's workspace (docs/git.md#the-checkout). Two sandboxed
 * processes, before the step's own:
 *
 * 1. the fetch: the only process that gets the credential (in its environment, as git's
 *    http.extraHeader), with the source's cache on the worker host bind-mounted writable at
 *    /plinth/git-cache. Under a lock on the cache it fetches, shallow, only the commit it needs (the
 *    ref on the run's first step, the recorded commit afterwards), and prints the commit.
 * 2. the extraction: no credential, the cache read-only; `git archive` of the commit into `src/`.
 *
 * No git ever runs on the host against the cache: its content came from a tenant's repository.
 */

/** Where the checkout is, relative to the workspace. */
export const CHECKOUT_DIR = 'src';

// The shared lock keeps a fetch from emptying the cache (when it passed its bound) while this reads it.
const EXTRACT_SCRIPT = `set -eu
exec 9<"$PLINTH_GIT_CACHE"
flock -s -w 600 9
mkdir -p "$PLINTH_CHECKOUT_DIR"
git --git-dir="$PLINTH_GIT_CACHE" archive --format=tar "$PLINTH_GIT_COMMIT" | tar -x -f - -C "$PLINTH_CHECKOUT_DIR"
`;

type Prepared = { checkout: StepCheckout | null } | { outcome: StepOutcome };

const failed = (
  code: 'Engine:Checkout:FAILED' | 'Engine:Checkout:INVALID_SOURCE' | 'Engine:Checkout:FENCED',
  message: string,
  metadata?: Record<string, unknown>,
): Prepared => ({
  outcome: { status: 'FAILED', error: engineError(code, message, metadata) },
});

/**
 * prepareCheckout checks the run's stack source out into the workspace, or says why it could not. A
 * run without a source gets no checkout. The first step of a run records the commit its ref resolved
 * to (fenced by its lease); every later step, and every retry, checks that commit out.
 */
export async function prepareCheckout(claimed: ClaimedStep, ctx: RunnerContext, workspace: StepWorkspace): Promise<Prepared> {
  // Read with the claim: the commit a step of the run recorded before this one was dispatched.
  const run = { commit_sha: claimed.run.commit_sha, source: claimed.run.stack_source };
  const codeSourceId = run.source?.codeSourceId;
  if (typeof codeSourceId !== 'string') return { checkout: null };
  const ref = typeof run.source?.ref === 'string' && run.source.ref ? run.source.ref : 'HEAD';
  if (ref !== 'HEAD' && !REF_PATTERN.test(ref)) return failed('Engine:Checkout:INVALID_SOURCE', `The stack's ref "${ref}" is not a branch, tag or commit name`);
  let workingDirectory: string;
  try {
    workingDirectory = relativeWorkingDirectory(path.posix.join(CHECKOUT_DIR, typeof run.source?.path === 'string' ? run.source.path : ''));
  } catch {
    return failed('Engine:Checkout:INVALID_SOURCE', "The stack's path leaves the repository");
  }
  if (!workingDirectory.startsWith(CHECKOUT_DIR)) return failed('Engine:Checkout:INVALID_SOURCE', "The stack's path leaves the repository");
  const stack = { id: claimed.run.stack_id ?? '', organizationId: claimed.run.organization_id };
  const source = await withRetries(() => findCodeSourceOfStack(ctx.db, codeSourceId, stack));
  if (!source) return failed('Engine:Checkout:FAILED', `Code source ${codeSourceId} no longer exists`);
  let credential: GitCredential | null;
  try {
    credential = await gitCredential(ctx.db, ctx.secrets, ctx.git, source);
  } catch (error) {
    if (error instanceof AppError) return failed('Engine:Checkout:FAILED', error.message, { code: error.code });
    throw error;
  }
  if (!CACHE_NAME_PATTERN.test(source.id)) return failed('Engine:Checkout:FAILED', 'The code source id cannot name a cache');
  const cache = await useSourceCache(ctx.git, ctx.workRoot, source.id, ctx.log);
  try {
    return await fetchAndExtract(claimed, ctx, workspace, { source, credential, ref, workingDirectory, cacheDir: cache.dir });
  } finally {
    await cache.end();
  }
}

interface CheckoutOf {
  source: CodeSourceRow;
  credential: GitCredential | null;
  ref: string;
  workingDirectory: string;
  cacheDir: string;
}

/** The checkout's fetch (twice, should a parallel first step record another commit) and extraction. */
async function fetchAndExtract(claimed: ClaimedStep, ctx: RunnerContext, workspace: StepWorkspace, what: CheckoutOf): Promise<Prepared> {
  const { source, credential, ref, workingDirectory, cacheDir } = what;
  const run = { commit_sha: claimed.run.commit_sha };
  const fetch = async (commit: string): Promise<Captured> => {
    const fetched = await runCaptured(
      workspace,
      fetchProcess(workspace, { cacheDir, url: source.url, credential, ref, commit, maxBytes: ctx.git.cacheMaxBytes }),
      ctx,
    );
    if (fetched.code !== FETCH_TOO_LARGE_EXIT) return fetched;
    return { ...fetched, error: fetchTooLargeReason(ctx.git.cacheMaxBytes) };
  };
  ctx.sink.write('system', `checking out ${run.commit_sha ?? ref} of ${source.url}`);
  let fetched = await fetch(run.commit_sha ?? '');
  if (fetched.error) return failed('Engine:Checkout:FAILED', `The fetch of ${source.url} ${fetched.error}`);
  let commitSha = fetched.stdout.trim();
  if (!run.commit_sha) {
    const fence = { runId: claimed.run.id, executionId: claimed.executionId, workerId: ctx.workerId, leaseEpoch: claimed.leaseEpoch };
    const recorded = await withRetries(() => recordRunCommit(ctx.db, fence, commitSha));
    if (!recorded) return failed('Engine:Checkout:FENCED', "The attempt was taken from this worker before it recorded the run's commit");
    // A parallel first step recorded its commit first: this one checks that out too.
    if (recorded !== commitSha) {
      fetched = await fetch(recorded);
      if (fetched.error) return failed('Engine:Checkout:FAILED', `The fetch of ${source.url} ${fetched.error}`);
      commitSha = recorded;
    }
  }
  // Credential-free: the extraction sees the cache read-only and gets nothing but what it needs.
  const readOnly = [cacheBind(cacheDir, false)];
  const extractEnv = gitEnv(null, {
    PLINTH_GIT_CACHE: workspace.pathOf(GIT_CACHE_TARGET, readOnly),
    PLINTH_GIT_COMMIT: commitSha,
    PLINTH_CHECKOUT_DIR: CHECKOUT_DIR,
  });
  const extracted = await runCaptured(workspace, { command: EXTRACT_SCRIPT, env: extractEnv, binds: readOnly }, ctx);
  if (extracted.error) return failed('Engine:Checkout:FAILED', `The checkout of ${commitSha} ${extracted.error}`);
  ctx.sink.write('system', `checked out ${commitSha} into ${workingDirectory}`);
  return { checkout: { commitSha, workingDirectory } };
}

interface Captured {
  stdout: string;
  /** Why it failed (for the step's error), when it did. */
  error?: string;
  /** Its exit code, when it ran to an exit. */
  code?: number;
}

/**
 * runCaptured runs one sandboxed process of the checkout: its stdout (a commit id) is kept, bounded, its
 * stderr goes to the step's log; it is stopped by the step's signal and by PLINTH_GIT_FETCH_TIMEOUT_MS.
 */
async function runCaptured(workspace: StepWorkspace, spec: Parameters<StepWorkspace['spawn']>[0], ctx: RunnerContext): Promise<Captured> {
  const proc = await workspace.spawn(spec);
  return new Promise((resolve) => {
    if (proc.child.pid) ctx.onSpawn?.(proc.child.pid);
    let stdout = '';
    let timedOut = false;
    proc.child.stdout!.on('data', (d: Buffer) => (stdout = (stdout + d.toString('utf8')).slice(0, 4096)));
    proc.child.stderr!.on('data', (d: Buffer) => {
      for (const line of d.toString('utf8').split('\n')) if (line.trim()) ctx.sink.write('stderr', line);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill();
    }, ctx.git.fetchTimeoutMs);
    const onAbort = () => proc.kill();
    ctx.signal.addEventListener('abort', onAbort);
    proc.child.on('error', (error: Error) => resolve({ stdout, error: `could not start: ${error.message}` }));
    proc.child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      proc.kill();
      if (timedOut) resolve({ stdout, error: `took longer than ${ctx.git.fetchTimeoutMs} ms (PLINTH_GIT_FETCH_TIMEOUT_MS)` });
      else if (ctx.signal.aborted) resolve({ stdout, error: 'was stopped' });
      else if (code !== 0)
        resolve({ stdout, code: code ?? undefined, error: `failed (${code === null ? signal : `exit ${code}`}); the step's log has git's message` });
      else resolve({ stdout });
    });
  });
}
