import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, readdirSync } from 'node:fs';
import { chown, mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOTLESS, SYSTEM_PATH } from './sandbox.ts';

// Shared with the Git cache of code sources, which the API process uses too.
export { ensurePrivateRoot, workDirectory } from '../../platform/work-dirs.ts';

const run = promisify(execFile);

/**
 * relativeWorkingDirectory turns `with.workingDirectory` into a path inside the workspace. Pipeline
 * validation already refuses absolute paths and `..`; this holds the line again where it matters.
 */
export function relativeWorkingDirectory(workingDirectory: string | undefined): string {
  if (!workingDirectory) return '.';
  const normal = path.posix.normalize(workingDirectory);
  if (path.posix.isAbsolute(normal) || normal === '..' || normal.startsWith('../'))
    throw new Error(`workingDirectory "${workingDirectory}" leaves the workspace`);
  return normal;
}

/** One syscall for the common empty directory; the recursive walk only when the step left files. */
export async function removeTree(dir: string) {
  try {
    await rmdir(dir);
  } catch {
    await removeStepFiles(dir);
  }
}

/** The removal's programs run with the system PATH: `find -execdir` refuses a PATH with a relative directory. */
const REMOVAL_ENV = { PATH: SYSTEM_PATH };

/**
 * removeStepFiles removes what a step left, whatever modes it gave it: a directory it made unreadable
 * (`chmod 000`) stops a recursive delete by anyone but root, and rootless the worker is not root. Its
 * owner may always change its mode back, so the tree's own directories are made readable, then it is
 * removed. Never through a link (`find -P`, and `rm` never follows one): a link the step planted to a
 * directory of the worker's user must not have the worker change modes or delete files there.
 * Coreutils' `rm`, not Node's: a step can nest directories deeper than a path may be long, which
 * Node's fails on (ENAMETOOLONG), leaving them on the disk for good.
 */
export function removeStepFiles(target: string): Promise<void> {
  return withModesMended(target, ['rm', '-rf', '--', target], 'removed');
}

/** emptyStepDirectory removes everything in `dir` as removeStepFiles does, with one `find` and few `rm`s however many entries it holds. */
function emptyStepDirectory(dir: string): Promise<void> {
  return withModesMended(dir, ['find', '-P', dir, '-mindepth', '1', '-maxdepth', '1', '-exec', 'rm', '-rf', '--', '{}', '+'], 'emptied');
}

/**
 * withModesMended runs `removal`, and when it fails makes every directory under `tree` its owner's to
 * read and write again, then runs it once more. Each directory as it is met, before find reads it
 * (`;`, not `+`), and by its name in its parent (`-execdir`): a full path may be too long.
 */
async function withModesMended(tree: string, [file, ...args]: string[], done: string): Promise<void> {
  if (await succeeds(file, args)) return;
  await succeeds('find', ['-P', tree, '-type', 'd', '-execdir', 'chmod', 'u+rwx', '{}', ';']);
  if (!(await succeeds(file, args))) throw new Error(`${tree} could not be ${done}`);
}

function succeeds(file: string, args: string[]): Promise<boolean> {
  return run(file, args, { env: REMOVAL_ENV }).then(
    () => true,
    () => false,
  );
}

export interface ClaimedWorkspace {
  /** The uid the step sees itself as (its own on the host too, as root; rootless, only inside its user namespace). */
  uid: number;
  /** Who owns the workspace on the host: `uid` as root; rootless, the worker's own user, which the step's uid maps to. */
  owner: number;
  /** `<root>/<uid>`: holds `workspace/` (the step's, mode 0700) and `root/` (where its filesystem view is mounted). */
  dir: string;
  workspace: string;
  mountPoint: string;
}

/**
 * claimWorkspace picks a free uid for one step and makes its directories. `mkdir` of `<root>/<uid>` is
 * the claim: atomic across every worker process on the host, so two running steps never share a uid,
 * and so never each other's files or processes. Rootless, every step is the worker's user on the host
 * and the uid only names the claim (and the step inside its user namespace): what keeps two steps
 * apart is then their namespaces alone.
 */
export async function claimWorkspace(root: string, uidBase: number, uidCount: number): Promise<ClaimedWorkspace> {
  for (let tries = 0; tries < 64; tries++) {
    const uid = uidBase + randomInt(uidCount);
    const dir = path.join(root, String(uid));
    try {
      await mkdir(dir, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    const workspace = path.join(dir, 'workspace');
    const mountPoint = path.join(dir, 'root');
    await Promise.all([mkdir(workspace, { mode: 0o700 }), mkdir(mountPoint, { mode: 0o700 }), writeFile(path.join(dir, OWNER_FILE), String(process.pid))]);
    if (!ROOTLESS) await chown(workspace, uid, uid);
    return { uid, owner: ROOTLESS ? process.getuid!() : uid, dir, workspace, mountPoint };
  }
  throw new Error(`no free sandbox uid in ${uidBase}..${uidBase + uidCount - 1}`);
}

/**
 * resetWorkspace readies a claim for its next step once every process of the last one is gone: the
 * workspace emptied (back to mode 0700: the step owned it and may have changed it) and the per-spawn
 * files of the claim (`scratch`: fstabs and bind points of spawns with binds) removed. What is left is
 * what any fresh claim of that uid holds, so the next step, whoever's, finds nothing of the last one.
 */
export async function resetWorkspace(claim: ClaimedWorkspace, scratch: Iterable<string>): Promise<void> {
  // The listing and the checks read one directory's inode: done at once, not through the thread pool,
  // at every step. Only what the step left (any size) is removed asynchronously. The mode first: the
  // step may have made its workspace unreadable, or its entries undeletable.
  const info = lstatSync(claim.workspace);
  if (!info.isDirectory() || info.uid !== claim.owner) throw new Error(`${claim.workspace} is no longer the step uid's directory`);
  if ((info.mode & 0o7777) !== 0o700) chmodSync(claim.workspace, 0o700);
  const inside = readdirSync(claim.workspace);
  await Promise.all([
    ...(inside.length ? [emptyStepDirectory(claim.workspace)] : []),
    ...[...scratch].map((name) => removeStepFiles(path.join(claim.dir, name))),
  ]);
  if (inside.length && readdirSync(claim.workspace).length) throw new Error(`${claim.workspace} could not be emptied`);
}

/** The uids of every live process on the host. */
export async function liveUids(): Promise<Set<number>> {
  const uids = new Set<number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = await readFile(`/proc/${entry}/status`, 'utf8');
      const match = /^Uid:\s+(\d+)/m.exec(status);
      if (match) uids.add(Number(match[1]));
    } catch {
      // It ended while we looked.
    }
  }
  return uids;
}

/** Names the worker process that made a claim: a warm sandbox waits as root, so its uid runs no process yet. */
const OWNER_FILE = 'owner';

async function ownerAlive(dir: string): Promise<boolean> {
  const pid = Number(await readFile(path.join(dir, OWNER_FILE), 'utf8').catch(() => ''));
  return Number.isInteger(pid) && pid > 0 && existsSync(`/proc/${pid}`);
}

/**
 * sweepStaleWorkspaces removes what a worker killed mid-step left: a claim older than a minute whose
 * worker is gone and whose uid runs no process is nobody's any more. Rootless, a step's uid is the
 * worker's own user on the host, so only the worker's death tells (its guards killed its steps).
 */
export async function sweepStaleWorkspaces(root: string, uidBase: number, uidCount: number): Promise<number> {
  const old: number[] = [];
  for (const entry of await readdir(root)) {
    const uid = Number(entry);
    if (!Number.isInteger(uid) || uid < uidBase || uid >= uidBase + uidCount) continue;
    const info = await stat(path.join(root, entry)).catch(() => undefined);
    if (info && Date.now() - info.mtimeMs >= 60_000 && !(await ownerAlive(path.join(root, entry)))) old.push(uid);
  }
  if (old.length === 0) return 0;
  const live = ROOTLESS ? new Set<number>() : await liveUids();
  let removed = 0;
  for (const uid of old) {
    if (live.has(uid)) continue;
    // force: another worker may be sweeping it at the same moment. One that cannot be removed stays
    // for the next sweep: it must not keep this worker from running steps.
    if (
      await removeStepFiles(path.join(root, String(uid))).then(
        () => true,
        () => false,
      )
    )
      removed++;
  }
  return removed;
}
