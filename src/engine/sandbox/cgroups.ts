import { constants, existsSync, readFileSync } from 'node:fs';
import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { StepLimits } from './sandbox.ts';

/**
 * Per-step cgroups: the limits on processes, memory and CPU, and a way to find and kill every process
 * of a step from outside. cgroup v2 when its controllers are usable here, else the v1 hierarchies of
 * the `pids`, `memory` and `cpu` controllers; with neither, steps run without these limits (the
 * process limit then still holds through RLIMIT_NPROC of the step's own uid). Step cgroups are made
 * under the worker's own cgroup (`<its cgroup>/plinth-steps/<work root tag>-<uid>`), so whatever limits the operator
 * put on the worker still cover its steps.
 */

type Controller = 'pids' | 'memory' | 'cpu';
const CONTROLLERS: Controller[] = ['pids', 'memory', 'cpu'];
const CPU_PERIOD_US = 100_000;

interface Mount {
  root: string;
  point: string;
  type: string;
  superOptions: string[];
}

function parseMountInfo(text: string): Mount[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [left, right = ''] = line.split(' - ');
      const fields = left.split(' ');
      const [type, , superOptions = ''] = right.split(' ');
      return { root: fields[3], point: fields[4], type, superOptions: superOptions.split(',') };
    });
}

/** The process's cgroup path in one hierarchy, relative to that hierarchy's mount. */
function ownPath(cgroupFile: string, match: (controllers: string[]) => boolean, mount: Mount): string {
  for (const line of cgroupFile.split('\n')) {
    const [, controllers, p] = line.split(':');
    if (p !== undefined && match(controllers.split(','))) {
      // Inside a cgroup namespace the mount's root is a prefix of the path the kernel reports.
      return mount.root !== '/' && p.startsWith(mount.root) ? p.slice(mount.root.length) : p;
    }
  }
  return '/';
}

export interface StepCgroup {
  /** Files the sandbox's init writes `0` to, to enter this cgroup before it starts the step. */
  procsFiles: string[];
  /** Whether the cgroup holds no process (so it can serve another step). */
  isEmpty(): Promise<boolean>;
  /** Kills every process still in the cgroup and removes it. */
  destroy(): Promise<void>;
}

export interface CgroupHost {
  version: 'v2' | 'v1' | 'none';
  enforced: { maxProcesses: boolean; memory: boolean; cpu: boolean };
  detail: string;
  create(name: string, limits: StepLimits): Promise<StepCgroup | undefined>;
  /** Removes step cgroups a dead worker left: empty ones that `isStale` (by name) says nobody uses. */
  sweep(isStale: (name: string) => boolean): Promise<void>;
}

async function killAll(procsFile: string) {
  for (let round = 0; round < 100; round++) {
    let pids: number[];
    try {
      pids = (await readFile(procsFile, 'utf8')).split('\n').filter(Boolean).map(Number);
    } catch {
      return;
    }
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function removeDir(dir: string) {
  // A killed process leaves its cgroup a moment after the signal: rmdir says EBUSY until then.
  for (let round = 0; round < 50; round++) {
    try {
      await rmdir(dir);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') throw error;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

function limitFiles(version: 'v1' | 'v2', controller: Controller, limits: StepLimits): [string, string][] {
  const memory = String(limits.memoryMb * 1024 * 1024);
  const quota = String(Math.round(limits.cpus * CPU_PERIOD_US));
  if (version === 'v2') {
    if (controller === 'pids') return [['pids.max', String(limits.maxProcesses)]];
    if (controller === 'memory')
      return [
        ['memory.max', memory],
        ['memory.swap.max', '0'],
      ];
    return [['cpu.max', `${quota} ${CPU_PERIOD_US}`]];
  }
  if (controller === 'pids') return [['pids.max', String(limits.maxProcesses)]];
  if (controller === 'memory')
    return [
      ['memory.limit_in_bytes', memory],
      ['memory.memsw.limit_in_bytes', memory],
    ];
  return [
    ['cpu.cfs_period_us', String(CPU_PERIOD_US)],
    ['cpu.cfs_quota_us', quota],
  ];
}

async function writeLimits(dir: string, files: [string, string][]) {
  for (const [file, value] of files) {
    const full = path.join(dir, file);
    // Swap accounting is optional in the kernel; the memory limit holds without it.
    if (!existsSync(full) && /swap|memsw/.test(file)) continue;
    await writeFile(full, value);
  }
}

/** bases are the directories (one per hierarchy) under which step cgroups are made, per controller. */
function hostFor(version: 'v1' | 'v2', bases: Map<Controller, string>, detail: string): CgroupHost {
  const dirsOf = (name: string) => [...new Set(bases.values())].map((base) => path.join(base, name));
  return {
    version,
    enforced: { maxProcesses: bases.has('pids'), memory: bases.has('memory'), cpu: bases.has('cpu') },
    detail,
    async create(name, limits) {
      const dirs = dirsOf(name);
      await Promise.all(dirs.map((d) => mkdir(d)));
      for (const [controller, base] of bases) await writeLimits(path.join(base, name), limitFiles(version, controller, limits));
      const killFile = path.join(dirs[0], 'cgroup.kill');
      const procsFiles = dirs.map((d) => path.join(d, 'cgroup.procs'));
      return {
        procsFiles,
        // Read at once: kernel files, answered without I/O, and a readFile through the thread pool (open,
        // fstat, read, close) cost the worker more CPU than the read itself, at every step.
        isEmpty: async () => procsFiles.every((f) => readFileSync(f, 'utf8').trim() === ''),
        destroy: async () => {
          if (version === 'v2' && existsSync(killFile)) await writeFile(killFile, '1').catch(() => {});
          for (const d of dirs) await killAll(path.join(d, 'cgroup.procs'));
          await Promise.all(dirs.map(removeDir));
        },
      };
    },
    async sweep(isStale) {
      for (const base of new Set(bases.values())) {
        for (const entry of await readdir(base, { withFileTypes: true }).catch(() => [])) {
          // rmdir refuses a cgroup that still holds a process: only empty ones go.
          if (entry.isDirectory() && isStale(entry.name)) await rmdir(path.join(base, entry.name)).catch(() => {});
        }
      }
    },
  };
}

const NO_CGROUPS = (detail: string): CgroupHost => ({
  version: 'none',
  enforced: { maxProcesses: false, memory: false, cpu: false },
  detail,
  create: async () => undefined,
  sweep: async () => {},
});

async function tryV2(mounts: Mount[], cgroupFile: string): Promise<CgroupHost | string> {
  const mount = mounts.find((m) => m.type === 'cgroup2');
  if (!mount) return 'no cgroup2 mount';
  const own = path.join(
    mount.point,
    ownPath(cgroupFile, (c) => c.length === 1 && c[0] === '', mount),
  );
  const available = (await readFile(path.join(own, 'cgroup.controllers'), 'utf8').catch(() => '')).trim().split(/\s+/);
  const wanted = CONTROLLERS.filter((c) => available.includes(c));
  if (!wanted.includes('pids')) return `cgroup v2 at ${mount.point} has no pids controller here`;
  const base = path.join(own, 'plinth-steps');
  const enable = wanted.map((c) => `+${c}`).join(' ');
  try {
    // Fails (EBUSY) when the worker's own cgroup holds processes and is not the root: v2 allows
    // controllers only on cgroups without processes of their own. An operator delegates one instead.
    await writeFile(path.join(own, 'cgroup.subtree_control'), enable);
    await mkdir(base, { recursive: true });
    await writeFile(path.join(base, 'cgroup.subtree_control'), enable);
  } catch (error) {
    return `cgroup v2 controllers cannot be enabled under ${own}: ${(error as Error).message}`;
  }
  return hostFor('v2', new Map(wanted.map((c) => [c, base])), `cgroup v2 (${wanted.join(', ')}) under ${base}`);
}

async function tryV1(mounts: Mount[], cgroupFile: string): Promise<CgroupHost | string> {
  const bases = new Map<Controller, string>();
  for (const controller of CONTROLLERS) {
    const mount = mounts.find((m) => m.type === 'cgroup' && m.superOptions.includes(controller));
    if (!mount) continue;
    const base = path.join(
      mount.point,
      ownPath(cgroupFile, (c) => c.includes(controller), mount),
      'plinth-steps',
    );
    try {
      await mkdir(base, { recursive: true });
      // Made by another worker already (mkdir said nothing): this one must be able to make cgroups in it.
      await access(base, constants.W_OK);
      bases.set(controller, base);
    } catch {
      // Not writable here (a read-only cgroup mount in a container, a worker not run as root): that controller is not enforced.
    }
  }
  if (!bases.has('pids')) return 'no writable cgroup v1 pids hierarchy';
  return hostFor('v1', bases, `cgroup v1 (${[...bases.keys()].join(', ')})`);
}

/** detectCgroups finds the cgroup hierarchies this worker can make step cgroups in, v2 first. */
export async function detectCgroups(): Promise<CgroupHost> {
  const [mountInfo, cgroupFile] = await Promise.all([readFile('/proc/self/mountinfo', 'utf8'), readFile('/proc/self/cgroup', 'utf8')]).catch(() => ['', '']);
  const mounts = parseMountInfo(mountInfo);
  const v2 = await tryV2(mounts, cgroupFile);
  if (typeof v2 !== 'string') return v2;
  const v1 = await tryV1(mounts, cgroupFile);
  if (typeof v1 !== 'string') return v1;
  return NO_CGROUPS(`no usable cgroups (${v2}; ${v1})`);
}
