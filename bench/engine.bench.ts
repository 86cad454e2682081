// npm run bench:engine: the run engine under load, with real processes end to end.
// Starts `plinth api` on an embedded PostgreSQL in a temporary data directory and two `plinth worker`
// processes against it. Creates 100 stacks whose change pipeline is three `script` steps: `a` and `b`
// (`true`, independent) then `c` (`true`, needs both). Then two phases of 500 runs each:
// - paced: runs triggered open-loop at BENCH_RATE runs/s (default 10), round-robin over the stacks, so
//   a run rarely waits for its stack. Measures dispatch latency, from sending
//   POST /stacks/{id}/pipeline-run to the run's first step RUNNING (its claim), p50 and p99; and the
//   engine's overhead per step: step wall time (claim to completion) minus its process's own time.
// - burst: 500 runs triggered as fast as BENCH_CLIENTS (default 20) concurrent clients can, measuring
//   runs completed per second (first POST to last run SUCCEEDED).
// Then prints worker RSS, and counts of lost steps (a step of a run that never SUCCEEDED) and doubly
// run steps (an execution claimed twice, or two executions of one step in one attempt). Exits 1 when a
// target is missed. Everything it starts, it stops. BENCH_RUNS (default 500) per phase.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort, ROOT, startPlinthProcess, type PlinthProcess } from '../test/helpers/plinth-process.ts';
import { percentile, stepFigures, type StepRow } from './engine-figures.ts';

const RUNS = Number(process.env.BENCH_RUNS || 500);
const STACKS = 100;
const RATE = Number(process.env.BENCH_RATE || 10);
const CLIENTS = Number(process.env.BENCH_CLIENTS || 20);
const TARGETS = { dispatchP50: 50, dispatchP99: 250, overheadMs: 25 };
const CONFIG = {
  steps: [
    { id: 'a', name: 'a', type: 'script', with: { command: 'true' } },
    { id: 'b', name: 'b', type: 'script', with: { command: 'true' } },
    { id: 'c', name: 'c', type: 'script', with: { command: 'true' }, needs: ['a', 'b'] },
  ],
};

const say = (line: string) => process.stderr.write(`${line}\n`);

async function api(baseUrl: string, token: string, method: string, url: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(baseUrl + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function createStacks(baseUrl: string, token: string): Promise<string[]> {
  const project = await api(baseUrl, token, 'POST', '/projects', { data: { givenId: 'bench', name: 'Bench' } });
  const env = await api(baseUrl, token, 'POST', '/environments', { data: { projectId: project.data.id, givenId: 'bench', name: 'Bench' } });
  const ids: string[] = [];
  for (let i = 0; i < STACKS; i++) {
    const body = { data: { projectId: project.data.id, environmentId: env.data.id, name: `stack-${i}`, pipelines: { change: CONFIG } } };
    ids.push((await api(baseUrl, token, 'POST', '/stacks', body)).data.id);
  }
  return ids;
}

function startWorker(databaseUrl: string, adminToken: string, dataDir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'worker'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PLINTH_ADMIN_TOKEN: adminToken, PLINTH_DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk;
      if (out.includes('plinth started')) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}:\n${out}`)));
  });
}

/** Triggers `count` runs, at `rate` per second or (rate 0) as fast as `clients` concurrent callers go. */
async function trigger(baseUrl: string, token: string, stacks: string[], count: number, rate: number, clients: number) {
  const sentAt = new Map<string, number>();
  let next = 0;
  const one = async (i: number) => {
    const t0 = Date.now();
    const res = await api(baseUrl, token, 'POST', `/stacks/${stacks[i % stacks.length]}/pipeline-run`, { data: { description: `bench ${i}` } });
    sentAt.set(res.data.id, t0);
  };
  if (rate > 0) {
    const started = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      pending.push(one(i));
    }
    await Promise.all(pending);
  } else {
    await Promise.all(Array.from({ length: clients }, async () => {
      while (next < count) await one(next++);
    }));
  }
  return sentAt;
}

async function waitForRuns(db: pg.Client, runIds: string[], timeoutMs = 300_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { rows } = await db.query(`select count(*)::int as open from pipeline_runs where id = any($1) and status not in ('SUCCEEDED', 'FAILED', 'CANCELLED')`, [runIds]);
    if (rows[0].open === 0) return Date.now();
    await sleep(100);
  }
  throw new Error('runs did not finish in time');
}

/** Per run: ms from sending the trigger to the API's transaction starting (the run's createdAt). */
async function apiDelays(db: pg.Client, sentAt: Map<string, number>): Promise<number[]> {
  const { rows } = await db.query(`select id, extract(epoch from created_at) * 1000 as created_ms from pipeline_runs where id = any($1)`, [[...sentAt.keys()]]);
  return rows.map((r) => Number(r.created_ms) - sentAt.get(r.id)!);
}

async function stepRows(db: pg.Client, runIds: string[]): Promise<StepRow[]> {
  const { rows } = await db.query(
    `select e.id, e.pipeline_run_id as run_id, e.step_id, e.status, e.attempt_epoch,
            extract(epoch from e.started_at) * 1000 as started_ms,
            extract(epoch from e.completed_at) * 1000 as completed_ms,
            extract(epoch from e.dispatched_at) * 1000 as dispatched_ms,
            (e.status_detail->>'processMs')::float8 as process_ms,
            (e.status_detail->>'prepareMs')::float8 as prepare_ms,
            (e.status_detail->>'cleanupMs')::float8 as cleanup_ms,
            (select count(*)::int from run_transitions t where t.step_execution_id = e.id and t.to_status = 'RUNNING') as claims
       from step_executions e where e.pipeline_run_id = any($1)`,
    [runIds],
  );
  return rows.map((r) => ({ ...r, started_ms: Number(r.started_ms), completed_ms: Number(r.completed_ms), dispatched_ms: Number(r.dispatched_ms) }));
}

function memory(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(status)?.[1]) / 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) a process has used so far, from /proc; with its reaped children (the scripts) if asked. */
function cpuSeconds(pid: number, withChildren = false): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const children = withChildren ? Number(fields[13]) + Number(fields[14]) : 0;
    return (Number(fields[11]) + Number(fields[12]) + children) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** CPU seconds of the PostgreSQL server: the postmaster and every backend it forked (live ones). */
function postgresCpuSeconds(postmasterPid: number): number {
  let total = cpuSeconds(postmasterPid);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(fields[1]) === postmasterPid) total += (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}

const ms = (n: number) => `${n.toFixed(1)} ms`;
const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-bench-engine-'));
  const adminToken = `plk_bench_${randomBytes(24).toString('base64url')}`;
  let plinth: PlinthProcess | undefined;
  const workers: ChildProcess[] = [];
  let db: pg.Client | undefined;
  const loadBefore = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  try {
    say(`starting plinth api on an embedded PostgreSQL in ${dataDir} ...`);
    plinth = await startPlinthProcess(
      { PLINTH_DATA_DIR: dataDir, PLINTH_PG_PORT: String(await freePort()), PLINTH_ADMIN_TOKEN: adminToken, LOG_LEVEL: 'warn' },
      { command: 'api', readyTimeoutMs: 120_000, discardStdout: true },
    );
    const password = readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
    const pgPort = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3]);
    const databaseUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/postgres`;
    say('starting two worker processes ...');
    for (let i = 0; i < 2; i++) workers.push(await startWorker(databaseUrl, adminToken, dataDir));
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    say(`creating ${STACKS} stacks ...`);
    const stacks = await createStacks(plinth.baseUrl, adminToken);

    say('warming up (20 runs) ...');
    const warm = await trigger(plinth.baseUrl, adminToken, stacks, 20, 0, 5);
    await waitForRuns(db, [...warm.keys()]);

    say(`paced phase: ${RUNS} runs at ${RATE} runs/s ...`);
    const paced = await trigger(plinth.baseUrl, adminToken, stacks, RUNS, RATE, CLIENTS);
    await waitForRuns(db, [...paced.keys()]);
    const pacedFigures = stepFigures(await stepRows(db, [...paced.keys()]), paced, CONFIG.steps.length);
    const pacedApi = await apiDelays(db, paced);

    say(`burst phase: ${RUNS} runs from ${CLIENTS} concurrent clients ...`);
    const postmasterPid = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const cpu = () => ({ api: cpuSeconds(plinth!.pid), workers: workers.reduce((sum, w) => sum + cpuSeconds(w.pid!, true), 0), postgres: postgresCpuSeconds(postmasterPid) });
    const cpuBefore = cpu();
    const burstStart = Date.now();
    const burst = await trigger(plinth.baseUrl, adminToken, stacks, RUNS, 0, CLIENTS);
    const burstEnd = await waitForRuns(db, [...burst.keys()]);
    const burstFigures = stepFigures(await stepRows(db, [...burst.keys()]), burst, CONFIG.steps.length);
    const runsPerSecond = RUNS / ((burstEnd - burstStart) / 1000);
    const cpuAfter = cpu();
    const perStep = (k: keyof typeof cpuBefore) => ((cpuAfter[k] - cpuBefore[k]) * 1000) / (RUNS * CONFIG.steps.length);
    const mem = workers.map((w) => memory(w.pid!));

    const p50 = percentile(pacedFigures.dispatch, 50);
    const p99 = percentile(pacedFigures.dispatch, 99);
    const overhead = percentile(pacedFigures.overhead, 50);
    const lost = pacedFigures.lost + burstFigures.lost;
    const twice = pacedFigures.doublyRun + burstFigures.doublyRun;
    const lines = [
      '',
      `Plinth engine benchmark: ${STACKS} stacks, 3-step pipeline (a, b in parallel; c needs both), 2 worker processes, ${os.availableParallelism()} cores`,
      `load average before: ${loadBefore}, after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews every figure)`,
      '',
      `paced phase (${RUNS} runs at ${RATE}/s):`,
      `  dispatch, POST to first step RUNNING:   p50 ${ms(p50)} (target < ${TARGETS.dispatchP50})  ${verdict(p50 < TARGETS.dispatchP50)}`,
      `                                          p99 ${ms(p99)} (target < ${TARGETS.dispatchP99})  ${verdict(p99 < TARGETS.dispatchP99)}`,
      `  engine overhead per step (wall - process): p50 ${ms(overhead)}  p99 ${ms(percentile(pacedFigures.overhead, 99))}  mean ${ms(pacedFigures.overheadMean)} (target < ${TARGETS.overheadMs})  ${verdict(overhead < TARGETS.overheadMs)}`,
      `  step process time: p50 ${ms(percentile(pacedFigures.process, 50))}; of the overhead, work dir make p50 ${ms(percentile(pacedFigures.prepare, 50))}, remove p50 ${ms(percentile(pacedFigures.cleanup, 50))}`,
      `  of the dispatch: POST to the API's transaction p50 ${ms(percentile(pacedApi, 50))} p99 ${ms(percentile(pacedApi, 99))};`,
      `  job pickup, dispatched to claimed:      p50 ${ms(percentile(pacedFigures.pickup, 50))}  p99 ${ms(percentile(pacedFigures.pickup, 99))}`,
      `burst phase (${RUNS} runs, ${CLIENTS} clients):`,
      `  runs completed per second:              ${runsPerSecond.toFixed(1)}`,
      `  dispatch under burst:                   p50 ${ms(percentile(burstFigures.dispatch, 50))}  p99 ${ms(percentile(burstFigures.dispatch, 99))}`,
      `  overhead per step under burst:          p50 ${ms(percentile(burstFigures.overhead, 50))}`,
      `  CPU per step (burst): api ${ms(perStep('api'))}, workers ${ms(perStep('workers'))} (scripts included), postgres ${ms(perStep('postgres'))}`,
      `worker RSS at the end:                    ${mem.map((m) => `${m.rss.toFixed(0)} MB (peak ${m.peak.toFixed(0)} MB)`).join(', ')}`,
      `lost steps:                               ${lost}  ${verdict(lost === 0)}`,
      `steps run twice:                          ${twice}  ${verdict(twice === 0)}`,
      '',
    ];
    process.stdout.write(lines.join('\n'));
    if (p50 >= TARGETS.dispatchP50 || p99 >= TARGETS.dispatchP99 || overhead >= TARGETS.overheadMs || lost > 0 || twice > 0) process.exitCode = 1;
  } finally {
    await db?.end().catch(() => {});
    for (const w of workers) {
      if (w.exitCode !== null) continue;
      const exited = new Promise((resolve) => w.once('exit', resolve));
      w.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000).then(() => w.kill('SIGKILL'))]);
    }
    if (plinth) await plinth.stop(60_000);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  say(`bench:engine failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exitCode = 1;
});
