import { spawn } from 'node:child_process';

/** What a workspace holds on the host's disk: bytes of the blocks its files take, and how many files (inodes). */
export interface DiskUse {
  bytes: number;
  files: number;
}

/** The most a step's workspace may hold (PLINTH_STEP_DISK_MB, PLINTH_STEP_DISK_FILES). */
export interface DiskLimits {
  diskMb: number;
  diskFiles: number;
}

/** What a workspace held when it was found past its limits, and those limits. */
export interface DiskOverrun extends DiskUse, DiskLimits {}

/** How often a running step's workspace is measured: what it may write past its limit is about what it writes in this time. */
export const DISK_CHECK_INTERVAL_MS = 2_000;
/** A measure that takes longer is given up (and tried again at the next check). */
const MEASURE_TIMEOUT_MS = 60_000;

export function overDiskLimits(use: DiskUse, limits: DiskLimits): boolean {
  return use.bytes > limits.diskMb * 1024 * 1024 || use.files > limits.diskFiles;
}

/**
 * watchDisk measures a workspace every `intervalMs`, one measure at a time, and calls `onExceeded`
 * once, then stops, when it holds more than `limits` allow. A filesystem quota would stop the write
 * itself, but needs root, a filesystem made for it and tools Node and util-linux do not bring; so a
 * step is measured instead, and may write about what its disk takes in one interval past its limit.
 */
export function watchDisk(
  limits: DiskLimits,
  measure: () => Promise<DiskUse>,
  onExceeded: (use: DiskUse) => void,
  intervalMs = DISK_CHECK_INTERVAL_MS,
): { stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const next = () => {
    timer = setTimeout(check, intervalMs);
    timer.unref();
  };
  const check = async () => {
    const use = await measure().catch(() => undefined);
    if (stopped) return;
    if (use && overDiskLimits(use, limits)) {
      stopped = true;
      onExceeded(use);
    } else next();
  };
  next();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * measureDisk runs coreutils' `du` over `dir` (at nice 10: a large tree takes a while), never following
 * a link nor leaving its filesystem. A rootless worker measures its namespaced steps' workspaces in a
 * user namespace of its own (`inOwnUserNamespace`), where it is root over its own user's files: a
 * step's files are that user's on the host, and a directory the step made unreadable (`chmod 000`)
 * would otherwise hide what it holds from a normal user.
 */
export async function measureDisk(dir: string, inOwnUserNamespace: boolean): Promise<DiskUse> {
  const bytes = await duTotal(['-B1', dir], inOwnUserNamespace);
  const files = await duTotal(['--inodes', dir], inOwnUserNamespace);
  return { bytes, files };
}

function duTotal(args: string[], inOwnUserNamespace: boolean): Promise<number> {
  const du = ['nice', '-n', '10', 'du', '-s', '-x', '-P', ...args];
  const [file, ...argv] = inOwnUserNamespace ? ['unshare', '--user', '--map-root-user', ...du] : du;
  return new Promise((resolve, reject) => {
    // stderr ignored: a step deleting files as du walks them makes du complain of each, without bound.
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LC_ALL: 'C' }, timeout: MEASURE_TIMEOUT_MS });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (out.length < 4096) out += chunk;
    });
    child.on('error', reject);
    // du exits 1 when a file vanished during the walk, and still prints the total of what it saw.
    child.on('close', () => {
      const total = /^(\d+)\t/.exec(out);
      if (total) resolve(Number(total[1]));
      else reject(new Error(`du printed no total for ${args.at(-1)}`));
    });
  });
}
