/**
 * npm run bench:engine: the run engine under load, real processes end to end, every edge timed.
 *
 * `plinth api-server` on an embedded PostgreSQL (restarted once with track_commit_timestamp = on) and two
 * `plinth worker` processes. 100 stacks whose change pipeline is `a`, `b` (in parallel) then `c`
 * (needs both), each step the same `sh -c` that records its first and last instruction's time.
 * Every edge is measured from PostgreSQL's commit timestamps of the history rows and the step's own
 * clock (one machine, one clock): trigger (the client sending the POST) → job visible (the trigger's
 * commit) → claimed → process started → process exited → outcome committed → next step claimed.
 *
 * Phases: paced (BENCH_RUNS runs at BENCH_RATE/s), burst (BENCH_RUNS runs from BENCH_CLIENTS clients),
 * bare (a bare graphile-worker job doing the same `sh -c` on the same database, paced the same; the
 * ratio of trigger → process started), kill (BENCH_KILL_RUNS slow runs; one worker is SIGKILLed
 * mid-step and replaced). Steps run twice are counted from the real process starts the steps record,
 * not from history rows (a Plinth step prints its marks into its own log, since a sandboxed step sees
 * no host file). The workers run with PLINTH_SANDBOX=BENCH_SANDBOX (default auto, the product's default;
 * `BENCH_SANDBOX=off` measures the engine without the sandbox). Exits 1 when a target is missed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { SPAWNER_COMM } from '../src/engine/sandbox/spawner.ts';
import { freePort, PLINTH_BIN, ROOT, startPlinthProcess, startScriptNodeFlags, type PlinthProcess } from '../test/helpers/plinth-process.ts';
import { cpuReport, cpuSnapshot } from './engine-cpu.ts';
import { EDGES, parseMarks, phaseFigures, summarize, type ExecutionTimes, type PhaseFigures, type RunTimes, type Summary } from './engine-figures.ts';
import { NETWORK_SETUP_TARGET_MS, networkSetupFigures } from './engine-network.ts';

const RUNS = Number(process.env.BENCH_RUNS || 500);
const KILL_RUNS = Number(process.env.BENCH_KILL_RUNS || 20);
const NETWORK_SAMPLES = Number(process.env.BENCH_NETWORK_SAMPLES || 60);
const STACKS = 100;
const RATE = Number(process.env.BENCH_RATE || 10);
const CLIENTS = Number(process.env.BENCH_CLIENTS || 20);
/**
 * What a user feels: a step starts within 3x of a bare graphile-worker job at p50 and within 250 ms at
 * p99 (paced phase); a SIGKILLed worker's steps end within a lease and a reap interval (the defaults,
 * PLINTH_WORKER_LEASE_MS and PLINTH_WORKER_REAP_MS: docs/engine.md), plus the 2 s step and a second.
 */
const TARGETS = { ratioP50: 3, startP99: 250, recoveryMs: 30_000 + 5_000 + 2_000 + 1_000 };

const say = (line: string) => process.stderr.write(`${line}\n`);
const work = mkdtempSync(path.join(os.tmpdir(), 'plinth-bench-engine-'));
// PostgreSQL runs as its own user under root: it must reach the data directory inside.
chmodSync(work, 0o755);
const MARKS = path.join(work, 'marks');
/** The bare job: its first and its last instruction record the time (ns) in a host file; nothing in between. */
const mark = (then = '') => `echo "s $PLINTH_STEP_EXECUTION_ID $(date +%s%N)" >> ${MARKS};${then} echo "e $PLINTH_STEP_EXECUTION_ID $(date +%s%N)" >> ${MARKS}`;
/**
 * A Plinth step does the same on its stdout: a sandboxed step sees no host file, and its log is stored
 * before its outcome is committed, so every mark of a finished attempt is in step_logs.
 */
const logMark = (then = '') => `echo "s $PLINTH_STEP_EXECUTION_ID $(date +%s%N)";${then} echo "e $PLINTH_STEP_EXECUTION_ID $(date +%s%N)"`;
const step = (id: string, command: string, extra: Record<string, unknown> = {}) => ({ id, name: id, type: 'script', with: { command }, ...extra });
const CONFIG = { steps: [step('a', logMark()), step('b', logMark()), { ...step('c', logMark()), needs: ['a', 'b'] }] };
const SLOW = { steps: [step('a', logMark(' sleep 2;'), { retry: { maxAttempts: 2 } })] };
/** The workers' PLINTH_SANDBOX: the product's default unless BENCH_SANDBOX says otherwise (e.g. off). */
const SANDBOX = process.env.BENCH_SANDBOX || 'auto';
/** BENCH_PG_STATEMENTS=1 loads pg_stat_statements and prints the burst's costliest statements (diagnosis; it costs CPU of its own). */
const PG_STATEMENTS = process.env.BENCH_PG_STATEMENTS === '1';

async function api(baseUrl: string, token: string, method: string, url: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(baseUrl + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function createStacks(baseUrl: string, token: string, count: number, config: unknown, name: string): Promise<string[]> {
  const project = await api(baseUrl, token, 'POST', '/projects', { data: { givenId: name, name } });
  const env = await api(baseUrl, token, 'POST', '/environments', { data: { projectId: project.data.id, givenId: name, name } });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = { data: { projectId: project.data.id, environmentId: env.data.id, name: `${name}-${i}`, pipelines: { change: config } } };
    ids.push((await api(baseUrl, token, 'POST', '/stacks', body)).data.id);
  }
  return ids;
}

/** Starts `node <args>`: a TypeScript entry needs `--import tsx` among them. */
function startChild(args: string[], env: Record<string, string>, ready: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk;
      if (out.includes(ready)) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}:\n${out}`)));
  });
}

/** The spawner of a worker (src/engine/sandbox/spawner.ts): its Node child. */
function spawnersOf(workerPid: number): number[] {
  const children = readFileSync(`/proc/${workerPid}/task/${workerPid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  return children.filter((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === SPAWNER_COMM);
}

/** Triggers `count` things through `one`, at `rate` per second or (rate 0) from `clients` concurrent callers; returns id → send time. */
async function trigger(count: number, rate: number, clients: number, one: (i: number) => Promise<string>): Promise<Map<string, number>> {
  const sentAt = new Map<string, number>();
  const fire = async (i: number) => {
    const t0 = Date.now();
    sentAt.set(await one(i), t0);
  };
  if (rate > 0) {
    const started = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait > 0) await sleep(wait);
      pending.push(fire(i));
    }
    await Promise.all(pending);
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < count) await fire(next++);
      }),
    );
  }
  return sentAt;
}

async function waitFor(db: pg.Client, query: string, params: unknown[], timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await db.query(query, params)).rows[0].done) return;
    await sleep(100);
  }
  throw new Error(`timed out: ${query}`);
}

const runsDone = (db: pg.Client, ids: string[], timeoutMs?: number) =>
  waitFor(db, `select count(*) = 0 as done from pipeline_runs where id = any($1) and status not in ('SUCCEEDED', 'FAILED', 'CANCELLED')`, [ids], timeoutMs);

async function times(db: pg.Client, sentAt: Map<string, number>): Promise<{ runs: RunTimes[]; executions: ExecutionTimes[] }> {
  const ids = [...sentAt.keys()];
  const commit = `extract(epoch from pg_xact_commit_timestamp(t.xmin)) * 1000`;
  const executions = await db.query(
    `select e.id, e.pipeline_run_id as "runId", e.step_id as "stepId", e.status,
            min(${commit}) filter (where t.to_status = 'QUEUED' and t.from_status is null) as "queuedCommitMs",
            min(${commit}) filter (where t.to_status = 'RUNNING') as "claimedCommitMs",
            max(${commit}) filter (where t.to_status in ('SUCCEEDED', 'FAILED', 'CANCELLED')) as "endedCommitMs"
       from step_executions e join run_transitions t on t.step_execution_id = e.id
      where e.pipeline_run_id = any($1) group by e.id`,
    [ids],
  );
  const runs = await db.query(
    `select t.pipeline_run_id as "runId", max(${commit}) as "endedCommitMs" from run_transitions t
      where t.pipeline_run_id = any($1) and t.step_execution_id is null and t.to_status in ('SUCCEEDED', 'FAILED', 'CANCELLED') group by 1`,
    [ids],
  );
  return {
    executions: executions.rows.map(
      (r): ExecutionTimes => ({
        id: r.id,
        runId: r.runId,
        stepId: r.stepId,
        status: r.status,
        queuedCommitMs: Number(r.queuedCommitMs),
        claimedCommitMs: Number(r.claimedCommitMs),
        endedCommitMs: Number(r.endedCommitMs),
      }),
    ),
    runs: runs.rows.map((r): RunTimes => ({ runId: r.runId, endedCommitMs: Number(r.endedCommitMs), triggerMs: sentAt.get(r.runId)! })),
  };
}

const marks = () => parseMarks(readFileSync(MARKS, 'utf8'));
const stepMarks = async (db: pg.Client) =>
  parseMarks((await db.query<{ line: string }>(`select line from step_logs where stream = 'stdout' and line ~ '^[se] '`)).rows.map((r) => r.line).join('\n'));
const fmt = (s: Summary) => `p50 ${s.p50.toFixed(1).padStart(7)}  p99 ${s.p99.toFixed(1).padStart(7)}  max ${s.max.toFixed(1).padStart(7)} ms  (n ${s.n})`;
const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');

function printPhase(title: string, f: PhaseFigures, lines: string[]) {
  lines.push(title);
  for (const edge of EDGES) lines.push(`  ${edge.padEnd(40)} ${fmt(f.edges[edge])}`);
  lines.push(`  steps run twice: ${f.runTwice} ${verdict(f.runTwice === 0)}; unfinished steps: ${f.unfinished} ${verdict(f.unfinished === 0)}`);
}

function rssMb(pid: number): string {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb ? (Number(kb) / 1024).toFixed(0) : '?';
}

/** The burst's statements by total execution time, with calls and time per run (BENCH_PG_STATEMENTS=1). */
async function topStatements(db: pg.Client, runs: number): Promise<string[]> {
  const { rows } = await db.query(
    `select calls, total_exec_time as ms, regexp_replace(query, '\\s+', ' ', 'g') as query from pg_stat_statements order by total_exec_time desc limit 15`,
  );
  const total = (await db.query('select sum(calls) as calls, sum(total_exec_time) as ms from pg_stat_statements')).rows[0];
  return [
    `  statements (pg_stat_statements, execution time only): ${(Number(total.calls) / runs).toFixed(1)} calls, ${(Number(total.ms) / runs).toFixed(2)} ms per run; costliest:`,
    ...rows.map(
      (r) =>
        `    ${(Number(r.calls) / runs).toFixed(2).padStart(6)} calls ${(Number(r.ms) / runs).toFixed(3).padStart(7)} ms/run  ${String(r.query).slice(0, 150)}`,
    ),
  ];
}

async function main() {
  const adminToken = `plk_bench_${randomBytes(24).toString('base64url')}`;
  const dataDir = path.join(work, 'data');
  writeFileSync(MARKS, '');
  let plinth: PlinthProcess | undefined;
  const children: ChildProcess[] = [];
  let db: pg.Client | undefined;
  const loadBefore = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const plinthEnv = { PLINTH_DATA_DIR: dataDir, PLINTH_PG_PORT: String(await freePort()), PLINTH_ADMIN_TOKEN: adminToken, LOG_LEVEL: 'warn' };
  // BENCH_API_NODE_ARGS: extra node flags for the API (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof-api`).
  const apiNodeArgs = (process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const startApi = () => startPlinthProcess(plinthEnv, { command: 'api-server', readyTimeoutMs: 120_000, discardStdout: true, nodeArgs: apiNodeArgs });
  try {
    say(`starting plinth api-server on an embedded PostgreSQL in ${dataDir} ...`);
    plinth = await startApi();
    const password = readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
    const pgPort = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3]);
    const databaseUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/postgres`;
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    await admin.query('alter system set track_commit_timestamp = on');
    if (PG_STATEMENTS) await admin.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
    await admin.end();
    say('restarting it with track_commit_timestamp = on ...');
    await plinth.stop(60_000);
    plinth = await startApi();
    const workerEnv = { DATABASE_URL: databaseUrl, PLINTH_ADMIN_TOKEN: adminToken, PLINTH_DATA_DIR: dataDir, LOG_LEVEL: 'info', PLINTH_SANDBOX: SANDBOX };
    // BENCH_WORKER_NODE_ARGS: extra node flags for the workers (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
    const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
    // As the product starts one: `plinth worker`, with `npm start`'s node flags.
    const startWorker = () => startChild([...startScriptNodeFlags(), ...nodeArgs, PLINTH_BIN, 'worker'], workerEnv, 'plinth started');
    say('starting two worker processes ...');
    const workers = [await startWorker(), await startWorker()];
    children.push(...workers);
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    if (PG_STATEMENTS) await db.query('create extension if not exists pg_stat_statements');
    say(`creating ${STACKS} stacks ...`);
    const stacks = await createStacks(plinth.baseUrl, adminToken, STACKS, CONFIG, 'bench');
    const slowStacks = await createStacks(plinth.baseUrl, adminToken, KILL_RUNS, SLOW, 'slow');
    const post = (list: string[]) => async (i: number) =>
      (await api(plinth!.baseUrl, adminToken, 'POST', `/stacks/${list[i % list.length]}/pipeline-run`, { data: {} })).data.id as string;

    say('warming up (20 runs) ...');
    await runsDone(db, [...(await trigger(20, 0, 5, post(stacks))).keys()]);

    say(`paced phase: ${RUNS} runs at ${RATE} runs/s ...`);
    const paced = await trigger(RUNS, RATE, CLIENTS, post(stacks));
    await runsDone(db, [...paced.keys()]);
    const pacedT = await times(db, paced);
    const pacedF = phaseFigures(pacedT.runs, pacedT.executions, await stepMarks(db), ['a', 'b'], 'c');

    say(`burst phase: ${RUNS} runs from ${CLIENTS} concurrent clients ...`);
    if (PG_STATEMENTS) await db.query('select pg_stat_statements_reset()');
    const cpuBefore = cpuSnapshot();
    const burst = await trigger(RUNS, 0, CLIENTS, post(stacks));
    await runsDone(db, [...burst.keys()]);
    // A worker's sandboxes are started (and reaped) by its spawner, a child process of its own: the
    // spawners' line holds the sandboxes' and steps' processes.
    const groups = {
      'the API': [plinth.pid],
      'the workers': workers.map((w) => w.pid!),
      'their spawners': workers.flatMap((w) => spawnersOf(w.pid!)),
      'this bench (the clients)': [process.pid],
    };
    const burstCpu = cpuReport(cpuBefore, cpuSnapshot(), { pids: groups }, RUNS, 'run');
    burstCpu.push(`    RSS of the workers after it: ${workers.map((w) => rssMb(w.pid!)).join(', ')} MB; of the API: ${rssMb(plinth.pid)} MB`);
    const statements = PG_STATEMENTS ? await topStatements(db, RUNS) : [];
    const burstT = await times(db, burst);
    const burstF = phaseFigures(burstT.runs, burstT.executions, await stepMarks(db), ['a', 'b'], 'c');
    const burstSeconds = (Math.max(...burstT.runs.map((r) => r.endedCommitMs)) - Math.min(...burst.values())) / 1000;
    const runsPerSecond = RUNS / burstSeconds;

    say(`bare phase: ${RUNS} graphile-worker jobs running the same sh -c at ${RATE}/s ...`);
    const bareWorker = await startChild(['--import', 'tsx', 'bench/engine-bare-worker.ts'], { DATABASE_URL: databaseUrl, BENCH_COMMAND: mark() }, 'ready');
    children.push(bareWorker);
    const bare = await trigger(RUNS, RATE, CLIENTS, async (i) => {
      const id = `bare-${i}-${randomBytes(4).toString('hex')}`;
      await db!.query(`select graphile_worker.add_job('bench.bare', json_build_object('id', $1::text))`, [id]);
      return id;
    });
    await waitFor(db, `select count(*) = 0 as done from graphile_worker.jobs where task_identifier = 'bench.bare'`, []);
    const bareMarks = marks();
    const bareStart = summarize([...bare].flatMap(([id, t0]) => (bareMarks.starts.has(id) ? [bareMarks.starts.get(id)![0] - t0] : [])));
    const bareTwice = [...bare.keys()].filter((id) => (bareMarks.starts.get(id)?.length ?? 0) !== 1).length;

    say(`kill phase: ${KILL_RUNS} runs of a 2 s step; one worker is SIGKILLed mid-step and replaced ...`);
    const slow = await trigger(KILL_RUNS, 0, KILL_RUNS, post(slowStacks));
    const victim = workers[0];
    // Should every step have gone to the other worker, the kill still happens (and is reported as such).
    await waitFor(db, `select count(*) > 0 as done from step_executions where status = 'RUNNING' and lease_owner like $1`, [`%-${victim.pid}-%`], 10_000).catch(
      () => {},
    );
    const killedAt = Date.now();
    victim.kill('SIGKILL');
    children.push(await startWorker());
    await runsDone(db, [...slow.keys()], 120_000);
    const slowT = await times(db, slow);
    const recoveredMs = Math.max(...slowT.runs.map((r) => r.endedCommitMs)) - killedAt;
    const killMarks = await stepMarks(db);
    const killF = phaseFigures(slowT.runs, slowT.executions, killMarks, [], 'a');
    const starts = slowT.executions.reduce((n, e) => n + (killMarks.starts.get(e.id)?.length ?? 0), 0);
    const lostAttempts = slowT.executions.filter((e) => e.status === 'FAILED').length;

    say(`network phase: ${NETWORK_SAMPLES} sandboxes with and without a network of their own, in turns, from the warm pool and built on demand ...`);
    const network = await networkSetupFigures(path.join(work, 'sandboxes'), NETWORK_SAMPLES);

    const ratio = (k: 'p50' | 'p99') => pacedF.edges['trigger → process started'][k] / bareStart[k];
    const overheadP99 = pacedF.edges['overhead: exited → next claimed'].p99;
    const startP99 = pacedF.edges['trigger → process started'].p99;
    const lines = [
      '',
      `Plinth engine benchmark: ${STACKS} stacks, a and b in parallel then c, 2 worker processes (PLINTH_SANDBOX=${SANDBOX}), ${os.availableParallelism()} cores`,
      `load average before: ${loadBefore}, after: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (other work on the machine skews every figure)`,
      '',
    ];
    printPhase(`paced phase (${RUNS} runs at ${RATE}/s):`, pacedF, lines);
    printPhase(`burst phase (${RUNS} runs, ${CLIENTS} clients): ${runsPerSecond.toFixed(1)} runs/s`, burstF, lines);
    lines.push(...burstCpu, ...statements);
    lines.push(`bare graphile-worker job, same sh -c, same database (${RUNS} at ${RATE}/s):`);
    lines.push(`  ${'add_job → process started'.padEnd(40)} ${fmt(bareStart)}; started other than once: ${bareTwice}`);
    lines.push(
      `kill phase (${KILL_RUNS} runs of a 2 s step, a worker SIGKILLed mid-step): ${lostAttempts} attempts failed over, ${starts} process starts for ${slowT.executions.length} executions, all runs ended ${(recoveredMs / 1000).toFixed(1)} s after the kill (target <= ${TARGETS.recoveryMs / 1000} s) ${verdict(recoveredMs <= TARGETS.recoveryMs)}`,
    );
    lines.push(
      `  steps run twice: ${killF.runTwice} ${verdict(killF.runTwice === 0)}; unfinished steps: ${killF.unfinished} ${verdict(killF.unfinished === 0)}`,
    );
    lines.push(`network phase (${NETWORK_SAMPLES} sandboxes of each, open → \`true\` ended):`);
    for (const [title, f] of [
      ["a step's first process (warm pool)", network.warm],
      ['a later process (built on demand)', network.onDemand],
    ] as const) {
      lines.push(`  ${title}:`);
      lines.push(`    ${'PLINTH_SANDBOX_NETWORK=none'.padEnd(38)} ${fmt(f.none)}`);
      lines.push(`    ${'PLINTH_SANDBOX_NETWORK=policy'.padEnd(38)} ${fmt(f.policy)}`);
      lines.push(
        `    the step's own network adds ${f.addedP50.toFixed(1)} ms at p50 (target < ${NETWORK_SETUP_TARGET_MS}) ${verdict(f.addedP50 < NETWORK_SETUP_TARGET_MS)}`,
      );
    }
    lines.push('');
    lines.push('targets (paced phase):');
    lines.push(
      `  trigger → process started vs bare: p50 ${ratio('p50').toFixed(2)}x (target <= ${TARGETS.ratioP50}x) ${verdict(ratio('p50') <= TARGETS.ratioP50)}, p99 ${ratio('p99').toFixed(2)}x`,
    );
    lines.push(`  trigger → process started p99 ${startP99.toFixed(1)} ms (target < ${TARGETS.startP99}) ${verdict(startP99 < TARGETS.startP99)}`);
    lines.push(`  overhead per step (exited → next claimed) p99 ${overheadP99.toFixed(1)} ms`);
    lines.push('');
    process.stdout.write(lines.join('\n'));
    const twice = pacedF.runTwice + burstF.runTwice + killF.runTwice + bareTwice;
    const unfinished = pacedF.unfinished + burstF.unfinished + killF.unfinished;
    const missed =
      network.warm.addedP50 >= NETWORK_SETUP_TARGET_MS ||
      network.onDemand.addedP50 >= NETWORK_SETUP_TARGET_MS ||
      ratio('p50') > TARGETS.ratioP50 ||
      startP99 >= TARGETS.startP99 ||
      recoveredMs > TARGETS.recoveryMs;
    if (missed || twice > 0 || unfinished > 0) process.exitCode = 1;
  } finally {
    await db?.end().catch(() => {});
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000).then(() => c.kill('SIGKILL'))]);
    }
    if (plinth) await plinth.stop(60_000);
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  say(`bench:engine failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exitCode = 1;
});
