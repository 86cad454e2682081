/**
 * The arithmetic of bench/engine.bench.ts, apart from its process wrangling. Every timestamp is
 * wall-clock milliseconds on the one machine: the client's send time of a trigger, PostgreSQL's
 * commit timestamps (track_commit_timestamp) of history rows, and the step's own `date` calls.
 */

/** What each step process wrote: its first instruction's time and (unless killed) its last one's. */
export interface ProcessMarks {
  /** Every start time per execution id (more than one: the process of one attempt started twice). */
  starts: Map<string, number[]>;
  ends: Map<string, number[]>;
}

export function parseMarks(text: string): ProcessMarks {
  const starts = new Map<string, number[]>();
  const ends = new Map<string, number[]>();
  for (const line of text.split('\n')) {
    const [kind, id, ns] = line.trim().split(' ');
    if (!id || !ns) continue;
    const map = kind === 's' ? starts : ends;
    map.set(id, [...(map.get(id) ?? []), Number(BigInt(ns) / 1000n) / 1000]);
  }
  return { starts, ends };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export interface Summary {
  p50: number;
  p99: number;
  max: number;
  n: number;
}

export function summarize(values: number[]): Summary {
  return { p50: percentile(values, 50), p99: percentile(values, 99), max: values.length ? Math.max(...values) : NaN, n: values.length };
}

/** One step execution with the commit times of its history rows. */
export interface ExecutionTimes {
  id: string;
  runId: string;
  stepId: string;
  status: string;
  queuedCommitMs: number;
  claimedCommitMs: number;
  endedCommitMs: number;
}

export interface RunTimes {
  runId: string;
  triggerMs: number;
  /** Commit of the run's SUCCEEDED (or other terminal) history row. */
  endedCommitMs: number;
}

/** The edges of a run of the bench pipeline: `a` and `b` in parallel, then `c`. */
export const EDGES = [
  'trigger → job visible',
  'job visible → claimed',
  'claimed → process started',
  'process started → exited',
  'process exited → outcome committed',
  'outcome committed → next step claimed',
  'trigger → process started',
  'overhead: exited → next claimed',
] as const;
export type Edge = (typeof EDGES)[number];

export interface PhaseFigures {
  edges: Record<Edge, Summary>;
  /** Executions whose process started more than once, plus steps whose process ran to its end twice. */
  runTwice: number;
  /** Steps of the runs with no SUCCEEDED execution. */
  unfinished: number;
}

/**
 * phaseFigures computes every edge. For the first steps (`a`, `b`) each edge is per execution; the
 * step after them (`c`) is "next": it is claimed once both needs committed, so its edges start at the
 * later of the two: the overhead per step is from the later exit of `a` and `b` to `c`'s claim,
 * which covers both completion transactions, the dispatch of `c` and its pickup.
 */
export function phaseFigures(runs: RunTimes[], executions: ExecutionTimes[], marks: ProcessMarks, firstSteps: string[], lastStep: string): PhaseFigures {
  const edges = Object.fromEntries(EDGES.map((e) => [e, [] as number[]])) as Record<Edge, number[]>;
  const byRun = new Map<string, ExecutionTimes[]>();
  for (const e of executions) byRun.set(e.runId, [...(byRun.get(e.runId) ?? []), e]);
  let runTwice = 0;
  let unfinished = 0;
  const started = (e: ExecutionTimes) => marks.starts.get(e.id)?.[0];
  const ended = (e: ExecutionTimes) => marks.ends.get(e.id)?.[0];
  for (const e of executions) {
    runTwice += Math.max(0, (marks.starts.get(e.id)?.length ?? 0) - 1);
    const s = started(e);
    const x = ended(e);
    if (s !== undefined) edges['claimed → process started'].push(s - e.claimedCommitMs);
    if (s !== undefined && x !== undefined) edges['process started → exited'].push(x - s);
    if (x !== undefined && e.status === 'SUCCEEDED') edges['process exited → outcome committed'].push(e.endedCommitMs - x);
    edges['job visible → claimed'].push(e.claimedCommitMs - e.queuedCommitMs);
  }
  for (const run of runs) {
    const list = byRun.get(run.runId) ?? [];
    const steps = new Map<string, ExecutionTimes[]>();
    for (const e of list) steps.set(e.stepId, [...(steps.get(e.stepId) ?? []), e]);
    for (const attempts of steps.values()) {
      if (!attempts.some((a) => a.status === 'SUCCEEDED')) unfinished++;
      // A step that ran to its end twice ran twice, whichever attempts did it.
      runTwice += Math.max(0, attempts.filter((a) => ended(a) !== undefined).length - 1);
    }
    unfinished += firstSteps.length + 1 - steps.size;
    if (firstSteps.length === 0) continue;
    const firsts = firstSteps.map((id) => steps.get(id)?.find((e) => e.status === 'SUCCEEDED')).filter((e): e is ExecutionTimes => e !== undefined);
    const last = steps.get(lastStep)?.find((e) => e.status === 'SUCCEEDED');
    if (firsts.length !== firstSteps.length || !last) continue;
    edges['trigger → job visible'].push(Math.min(...firsts.map((e) => e.queuedCommitMs)) - run.triggerMs);
    const firstStart = Math.min(...firsts.map((e) => started(e) ?? Number.POSITIVE_INFINITY));
    if (Number.isFinite(firstStart)) edges['trigger → process started'].push(firstStart - run.triggerMs);
    edges['outcome committed → next step claimed'].push(last.claimedCommitMs - Math.max(...firsts.map((e) => e.endedCommitMs)));
    const lastExit = Math.max(...firsts.map((e) => ended(e) ?? Number.NaN));
    if (!Number.isNaN(lastExit)) edges['overhead: exited → next claimed'].push(last.claimedCommitMs - lastExit);
  }
  return { edges: Object.fromEntries(EDGES.map((e) => [e, summarize(edges[e])])) as Record<Edge, Summary>, runTwice, unfinished };
}
