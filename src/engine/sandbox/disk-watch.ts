import { spawn } from 'node:child_process';
import { opendir, readFile, readlink, stat } from 'node:fs/promises';
import { SYSTEM_PATH } from './sandbox.ts';

/**
 * What a step takes of the host's disk: `bytes` of the blocks of its workspace's files and of the
 * deleted files its processes still hold open, and `files`: its workspace's entries (files,
 * directories and links) plus the descriptors its processes hold open.
 */
export interface DiskUse {
  bytes: number;
  files: number;
}

/** The most a step may take (PLINTH_STEP_DISK_MB, PLINTH_STEP_DISK_FILES). */
export interface DiskLimits {
  diskMb: number;
  diskFiles: number;
}

/** Why a step was stopped for its disk: what it took when found past its limits (or `unmeasurable`), and those limits. */
export interface DiskOverrun extends DiskUse, DiskLimits {
  /** The workspace could not be measured MAX_FAILED_MEASURES times in a row: it is held to be past its limits. */
  unmeasurable?: boolean;
}

/** What a measure reads: the workspace's directory on the host, and the step's processes. */
export interface DiskTarget {
  dir: string;
  /** Rootless namespaced steps: du and find run in a user namespace of their own (measureDisk). */
  inOwnUserNamespace: boolean;
  /** The files listing the step's processes (its cgroup's `cgroup.procs`), where the host has cgroups. */
  procsFiles?: string[];
}

/** How often a running step is measured. */
export const DISK_CHECK_INTERVAL_MS = 2_000;
/** A measure that takes longer is given up, and counts as failed. */
const MEASURE_TIMEOUT_MS = 30_000;
/** Failed measures in a row after which the step is stopped: a step must not escape its limits by breaking du. */
export const MAX_FAILED_MEASURES = 3;

/** Whether `use` is past either limit (at a limit is within it). */
export function overDiskLimits(use: DiskUse, limits: DiskLimits): boolean {
  return use.bytes > limits.diskMb * 1024 * 1024 || use.files > limits.diskFiles;
}

type Measure = (limits: DiskLimits, signal: AbortSignal) => Promise<DiskUse>;

/**
 * watchDisk measures a step every `intervalMs`, one measure at a time, and calls `onExceeded` once,
 * then stops, when it takes more than `limits` allow, or could not be measured MAX_FAILED_MEASURES
 * times in a row. A file system quota would stop the write itself, but needs root, a file system made
 * for it and tools that Node and util-linux do not bring; so a step is measured instead, and may write
 * what the disk takes in an interval and a measure past its limit. stop() ends a measure under way.
 */
export function watchDisk(
  limits: DiskLimits,
  measure: Measure,
  onExceeded: (overrun: DiskOverrun) => void,
  intervalMs = DISK_CHECK_INTERVAL_MS,
): { stop(): void } {
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let failed = 0;
  const next = () => {
    timer = setTimeout(check, intervalMs);
    timer.unref();
  };
  const check = async () => {
    const use = await measure(limits, stopping.signal).catch(() => undefined);
    if (stopping.signal.aborted) return;
    failed = use ? 0 : failed + 1;
    if (use && !overDiskLimits(use, limits)) return next();
    if (!use && failed < MAX_FAILED_MEASURES) return next();
    stopping.abort();
    onExceeded(use ? { ...use, ...limits } : { bytes: 0, files: 0, ...limits, unmeasurable: true });
  };
  next();
  return {
    stop() {
      stopping.abort();
      clearTimeout(timer);
    },
  };
}

/**
 * guardDisk holds a workspace to `limits`: it watches the step (watchDisk) and, once past them, calls
 * `killAll` and keeps the overrun, which the workspace reports and by which it kills a later spawn.
 */
export function guardDisk(limits: DiskLimits, target: DiskTarget, killAll: () => void): { readonly overrun: DiskOverrun | undefined; stop(): void } {
  let overrun: DiskOverrun | undefined;
  const watch = watchDisk(limits, diskMeasure(target), (found) => {
    overrun = found;
    killAll();
  });
  return {
    get overrun() {
      return overrun;
    },
    stop: () => watch.stop(),
  };
}

/**
 * diskMeasure measures what a step takes of the disk (DiskUse): its workspace's tree, and what its
 * processes hold open, where they are known (a step cgroup's).
 */
export function diskMeasure(target: DiskTarget): Measure {
  return async (limits, signal) => {
    const tree = await measureTree(target, limits, signal);
    if (tree.files > limits.diskFiles || !target.procsFiles) return tree;
    const held = await heldOpen(target.procsFiles, (await stat(target.dir)).dev, limits.diskFiles - tree.files);
    return { bytes: tree.bytes + held.bytes, files: tree.files + held.files };
  };
}

/**
 * The walk of a workspace: its entries counted by find, and only up to one past the limit (`head`
 * ends find there), so a step cannot make the walk as long as it likes; then, under the limit, its
 * blocks by du. Neither follows a link; both enter other file systems (a btrfs subvolume the step made
 * is its own file system; no host mount is ever under a workspace). Exit codes are ignored: a step
 * deleting files as they are walked makes both complain, and both still count what they met.
 */
const MEASURE_TREE = `entries=$(find "$1" 2>/dev/null | head -n "$2" | wc -l)
if [ "$entries" -ge "$2" ]; then echo "$entries 0"; exit 0; fi
kib=$(du -sk "$1" 2>/dev/null | cut -f1)
echo "$entries $kib"`;

/**
 * measureTree runs MEASURE_TREE at nice 10, in a process group of its own that `signal` kills whole. A
 * rootless worker measures its namespaced steps' workspaces in a user namespace of its own
 * (`inOwnUserNamespace`), where it is root over its own user's files: a step's files are that user's
 * on the host, and a directory the step made unreadable (`chmod 000`) would otherwise hide what it
 * holds from a normal user.
 */
function measureTree(target: DiskTarget, limits: DiskLimits, signal: AbortSignal): Promise<DiskUse> {
  const script = ['nice', '-n', '10', 'sh', '-c', MEASURE_TREE, 'plinth-disk', target.dir, String(limits.diskFiles + 1)];
  const [file, ...args] = target.inOwnUserNamespace ? ['unshare', '--user', '--map-root-user', ...script] : script;
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'ignore'], env: { PATH: SYSTEM_PATH, LC_ALL: 'C' }, detached: true });
    const end = () => {
      if (!child.pid || child.exitCode !== null) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Its group is made by the child (setsid) just after the fork: before that, only the child is there.
        child.kill('SIGKILL');
      }
    };
    const timeout = setTimeout(end, MEASURE_TIMEOUT_MS);
    signal.addEventListener('abort', end, { once: true });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (out.length < 256) out += chunk;
    });
    child.on('error', reject);
    child.on('close', () => {
      clearTimeout(timeout);
      signal.removeEventListener('abort', end);
      const counted = /^(\d+) (\d+)\n$/.exec(out);
      if (counted) resolve({ files: Number(counted[1]), bytes: Number(counted[2]) * 1024 });
      else reject(new Error(`no measure of ${target.dir}`));
    });
  });
}

/**
 * heldOpen counts the descriptors the step's processes hold, and the blocks of the deleted files among
 * them on the workspace's file system (`device`; not its `/tmp`, which is memory): unlinked while
 * open, or made without a name (O_TMPFILE), a step could otherwise write to such a file until the disk
 * is full, and no walk of its workspace would find it. It stops counting past `room` descriptors: the
 * step is over its limit by then.
 */
async function heldOpen(procsFiles: string[], device: number, room: number): Promise<DiskUse> {
  const pids = new Set<string>();
  for (const file of procsFiles) for (const pid of (await readFile(file, 'utf8').catch(() => '')).split('\n')) if (pid) pids.add(pid);
  const seen = new Set<string>();
  const held = { bytes: 0, files: 0 };
  for (const pid of pids) {
    const fds = await opendir(`/proc/${pid}/fd`).catch(() => undefined);
    if (!fds) continue;
    for await (const fd of fds) {
      if (++held.files > room) return held;
      const link = `/proc/${pid}/fd/${fd.name}`;
      if (!(await readlink(link).catch(() => '')).endsWith(' (deleted)')) continue;
      const file = await stat(link).catch(() => undefined);
      if (!file?.isFile() || file.dev !== device || seen.has(`${file.dev}:${file.ino}`)) continue;
      seen.add(`${file.dev}:${file.ino}`);
      held.bytes += file.blocks * 512;
    }
  }
  return held;
}
