// npm run bench:api: Plinth's API under load, beside a bare Fastify + pg baseline doing the same SQL,
// and beside a minimal floor for whoami.
//
// Starts the real CLI (`plinth api-server`) on an embedded PostgreSQL in a temporary data directory, seeds one
// organization with 100,000 memberships, starts bench/api-baseline.ts (Plinth's own queries) and
// bench/api-floor.ts (the least a credential check can do: hashed key joined to user and organization,
// a prepared statement) as separate processes on the same database, then loads them on loopback with
// autocannon: GET /auth/whoami against both, and GET /memberships?limit=50 at the first page and at the
// page near row 100,000 against the baseline. Prints requests/s, p50 and p99, the ratios, and Plinth's
// RSS after the load. Exits 1 when a target is missed. Everything it starts, it stops.
//
// BENCH_DURATION (s per load, default 3), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 10),
// BENCH_LOG_LEVEL (Plinth's LOG_LEVEL, default info as in production), BENCH_NODE_ARGS (flags for Plinth's node).

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { encodeCursor } from '../src/platform/pagination.ts';
import { freePort, ROOT, startPlinthProcess, type PlinthProcess } from '../test/helpers/plinth-process.ts';

const MEMBERS = 100_000;
const DURATION = Number(process.env.BENCH_DURATION || 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 10);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'info';
const TARGETS = { whoamiRatio: 0.8, deepPageRatio: 1.2, rssMb: 200 };

interface LoadResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}
type Autocannon = (options: { url: string; connections: number; duration: number; headers?: Record<string, string> }) => Promise<LoadResult>;
// autocannon ships no types; this is the one call the benchmark makes.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

interface Figures {
  rps: number;
  /** CPU time the server process spent per request: steadier than req/s on a machine shared with other work. */
  cpuUs: number;
  p50: number;
  p99: number;
}

const say = (line: string) => process.stderr.write(`${line}\n`);

/** User + system CPU time of a process so far, in microseconds (from /proc; clock ticks of 10 ms). */
function cpuTimeUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function load(url: string, token: string, pid: number, duration = DURATION): Promise<Figures> {
  const cpuBefore = cpuTimeUs(pid);
  const result = await autocannon({ url, connections: CONNECTIONS, duration, headers: { authorization: `Bearer ${token}` } });
  const cpuUs = (cpuTimeUs(pid) - cpuBefore) / Math.max(1, result.requests.total);
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  return { rps: result.requests.average, cpuUs, p50: result.latency.p50, p99: result.latency.p99 };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const medianFigures = (runs: Figures[]): Figures => ({
  rps: median(runs.map((r) => r.rps)),
  cpuUs: median(runs.map((r) => r.cpuUs)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
});

interface Scenario {
  name: string;
  path: string;
  token: string;
}

/**
 * Loads every scenario against both servers, ROUNDS times, alternating which goes first, so a burst
 * of other work on the machine lands on both sides rather than on one. Ratios are taken per round and
 * their median reported.
 */
interface Target {
  url: string;
  pid: number;
}

async function loadAll(scenarios: Scenario[], targets: { plinth: Target; baseline: Target }) {
  for (const s of scenarios) {
    await load(targets.plinth.url + s.path, s.token, targets.plinth.pid, 1);
    await load(targets.baseline.url + s.path, s.token, targets.baseline.pid, 1);
  }
  const runs = scenarios.map(() => ({ plinth: [] as Figures[], baseline: [] as Figures[] }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, s] of scenarios.entries()) {
      const order = round % 2 === 0 ? (['plinth', 'baseline'] as const) : (['baseline', 'plinth'] as const);
      for (const side of order) runs[i][side].push(await load(targets[side].url + s.path, s.token, targets[side].pid));
    }
  }
  return runs;
}

async function api(baseUrl: string, token: string, method: string, url: string, body?: unknown, orgId?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (orgId) headers['x-organization-id'] = orgId;
  const res = await fetch(baseUrl + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** One organization of MEMBERS users, inserted in two statements; ids in newId()'s time-ordered hex form. */
async function seed(databaseUrl: string, orgId: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const id = `'0180' || lpad(to_hex(g), 28, '0')`;
    await client.query(`insert into users (id, email) select ${id}, 'member-' || g || '@bench.example' from generate_series(1, ${MEMBERS}) g`);
    await client.query(`insert into memberships (id, organization_id, user_id, role) select ${id}, $1, ${id}, 'VIEWER' from generate_series(1, ${MEMBERS}) g`, [
      orgId,
    ]);
    await client.query('analyze users');
    await client.query('analyze memberships');
    const { rows } = await client.query(`select id from memberships where organization_id = $1 order by id offset $2 limit 1`, [orgId, MEMBERS - 50]);
    return encodeCursor(rows[0].id);
  } finally {
    await client.end();
  }
}

async function startBaseline(databaseUrl: string, token: string, script = 'bench/api-baseline.ts'): Promise<{ child: ChildProcess; baseUrl: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${baseUrl}/auth/whoami`, { headers: { authorization: `Bearer ${token}` } })).ok) return { child, baseUrl };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`${script} did not start`);
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1]);
  return kb / 1024;
}

const fmt = (f: Figures) =>
  `${f.rps.toFixed(0).padStart(6)} req/s  p50 ${String(f.p50).padStart(3)} ms  p99 ${String(f.p99).padStart(3)} ms  ${f.cpuUs.toFixed(0).padStart(4)} µs CPU/req`;
const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-bench-'));
  const adminToken = `plk_bench_${randomBytes(24).toString('base64url')}`;
  let plinth: PlinthProcess | undefined;
  let baseline: ChildProcess | undefined;
  let floor: ChildProcess | undefined;
  try {
    say(`starting plinth api-server on an embedded PostgreSQL in ${dataDir} ...`);
    plinth = await startPlinthProcess(
      { PLINTH_DATA_DIR: dataDir, PLINTH_PG_PORT: String(await freePort()), PLINTH_ADMIN_TOKEN: adminToken, LOG_LEVEL },
      { command: 'api-server', readyTimeoutMs: 120_000, discardStdout: true, nodeArgs: (process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean) },
    );
    const password = readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
    const org = await api(plinth.baseUrl, adminToken, 'POST', '/organizations', { data: { name: 'Bench', billingEmail: 'bench@example.com' } });
    const orgId: string = org.data.id;
    const sa = await api(plinth.baseUrl, adminToken, 'POST', '/service-accounts', { data: { name: 'bench', role: 'VIEWER' } }, orgId);
    const key = await api(plinth.baseUrl, adminToken, 'POST', '/api-keys', { data: { name: 'bench', serviceAccountId: sa.data.id } }, orgId);
    const saToken: string = key.data.token;

    const databaseUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${postgresPort(dataDir)}/postgres`;
    say(`seeding ${MEMBERS.toLocaleString('en')} memberships ...`);
    const deepCursor = await seed(databaseUrl, orgId);
    const deepQuery = `/memberships?limit=50&cursor=${deepCursor}`;
    const lastPage = await api(plinth.baseUrl, saToken, 'GET', deepQuery);
    const firstPage = await api(plinth.baseUrl, saToken, 'GET', '/memberships?limit=50');
    if (firstPage.data.length !== 50 || lastPage.data.length !== 50 || lastPage.meta.nextCursor)
      throw new Error('the seeded pages are not what the benchmark expects');

    const idleRss = rssMb(plinth.pid);
    say('starting the baseline (bare Fastify + pg) ...');
    const started = await startBaseline(databaseUrl, adminToken);
    baseline = started.child;
    say('starting the minimal floor (bare Fastify + pg, prepared key lookup) ...');
    const floorStarted = await startBaseline(databaseUrl, adminToken, 'bench/api-floor.ts');
    floor = floorStarted.child;

    say(`loading: 1 s warm-up each, then ${ROUNDS} rounds of ${DURATION} s per scenario and server, ${CONNECTIONS} connections ...`);
    const scenarios: Scenario[] = [
      { name: 'GET /auth/whoami', path: '/auth/whoami', token: adminToken },
      { name: 'GET /memberships?limit=50 (first)', path: '/memberships?limit=50', token: saToken },
      { name: 'GET /memberships?limit=50 (~100k)', path: deepQuery, token: saToken },
    ];
    const [whoami, first, deepPage] = await loadAll(scenarios, {
      plinth: { url: plinth.baseUrl, pid: plinth.pid },
      baseline: { url: started.baseUrl, pid: started.child.pid! },
    });
    const [whoamiFloor] = await loadAll([scenarios[0]], {
      plinth: { url: plinth.baseUrl, pid: plinth.pid },
      baseline: { url: floorStarted.baseUrl, pid: floorStarted.child.pid! },
    });
    const rss = rssMb(plinth.pid);
    const baselineRss = rssMb(baseline.pid!);

    const perRound = (f: (round: number) => number) => median(Array.from({ length: ROUNDS }, (_, round) => f(round)));
    const whoamiBaselineRatio = perRound((r) => whoami.plinth[r].rps / whoami.baseline[r].rps);
    const whoamiRatio = perRound((r) => whoamiFloor.plinth[r].rps / whoamiFloor.baseline[r].rps);
    const deepRatio = perRound((r) => first.plinth[r].rps / deepPage.plinth[r].rps);
    const row = (name: string, runs: { plinth: Figures[]; baseline: Figures[] }) =>
      `${name.padEnd(36)}${fmt(medianFigures(runs.plinth))} | ${fmt(medianFigures(runs.baseline))}`;
    const lines = [
      '',
      `Plinth API benchmark: ${MEMBERS.toLocaleString('en')} memberships, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${DURATION} s, loopback, ${os.availableParallelism()} cores, load average ${os.loadavg()[0].toFixed(1)}`,
      '',
      `${''.padEnd(36)}${'plinth'.padEnd(55)}| baseline (bare Fastify + pg)`,
      row(scenarios[0].name, whoami),
      row(scenarios[1].name, first),
      row(scenarios[2].name, deepPage),
      `${''.padEnd(36)}${'plinth'.padEnd(55)}| minimal floor (prepared key → user, org)`,
      row(scenarios[0].name, whoamiFloor),
      '',
      `whoami, plinth / minimal floor req/s:          ${whoamiRatio.toFixed(2)}x  (target >= ${TARGETS.whoamiRatio}x)  ${verdict(whoamiRatio >= TARGETS.whoamiRatio)}`,
      `whoami, plinth / baseline (its own query):     ${whoamiBaselineRatio.toFixed(2)}x`,
      `memberships, first page / page at ~100k req/s: ${deepRatio.toFixed(2)}x  (target <= ${TARGETS.deepPageRatio}x)  ${verdict(deepRatio <= TARGETS.deepPageRatio)}`,
      `memberships first page, plinth / baseline:     ${perRound((r) => first.plinth[r].rps / first.baseline[r].rps).toFixed(2)}x`,
      `memberships page ~100k, plinth / baseline:     ${perRound((r) => deepPage.plinth[r].rps / deepPage.baseline[r].rps).toFixed(2)}x`,
      `CPU per request, plinth / baseline:            whoami ${perRound((r) => whoami.plinth[r].cpuUs / whoami.baseline[r].cpuUs).toFixed(2)}x, ` +
        `first page ${perRound((r) => first.plinth[r].cpuUs / first.baseline[r].cpuUs).toFixed(2)}x, page ~100k ${perRound((r) => deepPage.plinth[r].cpuUs / deepPage.baseline[r].cpuUs).toFixed(2)}x`,
      `plinth RSS after the load:                     ${rss.toFixed(0)} MB  (target < ${TARGETS.rssMb} MB)  ${verdict(rss < TARGETS.rssMb)}`,
      `  (plinth idle before the load: ${idleRss.toFixed(0)} MB; baseline after its load: ${baselineRss.toFixed(0)} MB)`,
      '',
    ];
    process.stdout.write(lines.join('\n'));
    if (whoamiRatio < TARGETS.whoamiRatio || deepRatio > TARGETS.deepPageRatio || rss >= TARGETS.rssMb) process.exitCode = 1;
  } finally {
    for (const child of [baseline, floor]) {
      if (!child || child.exitCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
    }
    if (plinth) {
      const { code } = await plinth.stop(60_000);
      if (code !== 0) say(`plinth exited with ${code}:\n${plinth.output()}`);
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The port the embedded PostgreSQL listens on, from its pid file. */
function postgresPort(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3]);
}

main().catch((error) => {
  say(`bench:api failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exitCode = 1;
});
