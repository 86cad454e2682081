/**
 * Where the CPU of a bench phase went, from /proc: each process's own time (utime + stime) and the
 * time of the children it reaped (cutime + cstime), read at the phase's start and end, beside the
 * machine's total from /proc/stat. A short-lived process (a sandbox's `mount`, a step's `sh`) is counted
 * once its parent reaps it, so a worker's "children" are its steps and sandboxes, and PostgreSQL's
 * backends are counted whether they live through the phase or not.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

interface ProcTimes {
  pid: number;
  comm: string;
  own: number;
  children: number;
}

function readProc(pid: number): ProcTimes | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const f = stat.slice(close + 2).split(' ');
    // Fields after the comm, 0-based: utime 11, stime 12, cutime 13, cstime 14.
    return { pid, comm, own: (Number(f[11]) + Number(f[12])) * TICK_MS, children: (Number(f[13]) + Number(f[14])) * TICK_MS };
  } catch {
    return undefined;
  }
}

function allProcs(): Map<number, ProcTimes> {
  const procs = new Map<number, ProcTimes>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = readProc(Number(name));
    if (p) procs.set(p.pid, p);
  }
  return procs;
}

function machineBusyMs(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is everything but idle and iowait.
  return (cpu.reduce((a, b) => a + b, 0) - cpu[3] - (cpu[4] ?? 0)) * TICK_MS;
}

export interface CpuGroups {
  /** Named process sets: their own time and their reaped children's time are reported apart. */
  pids: Record<string, number[]>;
}

export interface CpuSnapshot {
  procs: Map<number, ProcTimes>;
  busyMs: number;
}

export const cpuSnapshot = (): CpuSnapshot => ({ procs: allProcs(), busyMs: machineBusyMs() });

/** Lines of CPU per unit (a run), by group: PostgreSQL (every `postgres` process), each named set, and the rest of the machine. */
export function cpuReport(before: CpuSnapshot, after: CpuSnapshot, groups: CpuGroups, units: number, unitName: string): string[] {
  const delta = (pid: number, part: 'own' | 'children') => (after.procs.get(pid)?.[part] ?? 0) - (before.procs.get(pid)?.[part] ?? 0);
  const pgPids = [...new Set([...before.procs.values(), ...after.procs.values()].filter((p) => p.comm.startsWith('postgres')).map((p) => p.pid))];
  const rows: Array<[string, number]> = [['PostgreSQL (all its processes)', pgPids.reduce((n, pid) => n + delta(pid, 'own') + delta(pid, 'children'), 0)]];
  for (const [name, pids] of Object.entries(groups.pids)) {
    rows.push([`${name} (own)`, pids.reduce((n, pid) => n + delta(pid, 'own'), 0)]);
    rows.push([`${name} (the processes it started)`, pids.reduce((n, pid) => n + delta(pid, 'children'), 0)]);
  }
  const busy = after.busyMs - before.busyMs;
  const counted = rows.reduce((n, [, ms]) => n + ms, 0);
  const perUnit = (ms: number) => (ms / units).toFixed(1).padStart(7);
  // On a virtual machine the total from /proc/stat has been seen to fall short of the processes' own
  // times (which may include time the host gave to something else): then the rest cannot be told.
  const rest = busy >= counted ? perUnit(busy - counted) : '      ?';
  return [
    `  CPU per ${unitName} (machine busy ${(busy / 1000).toFixed(1)} s for ${units} ${unitName}s: ${perUnit(busy)} ms each)`,
    ...rows.map(([name, ms]) => `    ${name.padEnd(44)} ${perUnit(ms)} ms`),
    `    ${'everything else on the machine'.padEnd(44)} ${rest} ms${busy >= counted ? '' : " (the machine's total is below the processes' own)"}`,
  ];
}
