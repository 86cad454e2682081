// npm run bench:console: the web console's runs inbox at the size of a large organization.
//
// Starts the real CLI (`plinth api-server`) on an embedded PostgreSQL in a temporary data directory,
// creates BENCH_STACKS (10,000) stacks through the API in BENCH_ENVIRONMENTS (20) environments of one
// project (a tenth of them tracking the branch `release`, the rest `main`), then inserts BENCH_RUNS
// (1,000,000) finished runs spread over them with SQL (80% succeeded, 12% failed, 8% cancelled, one in
// 5,000 waiting for approval; each with a commit; the stacks' own pipelines and versions), and analyzes.
// Then it signs in to the console as a browser does and, with one client on loopback, times from the
// client's clock GET of the inbox page (the whole HTML page: session, API reads, stack names, render)
// BENCH_SAMPLES (100) times for each view: no filter, each status filter, a stack, an environment,
// "started by me", a branch (and one no stack tracks), a commit prefix, and the second page.
//
// Then it triggers one run and inserts a log of BENCH_LOG_LINES (500,000) lines for its first step with
// SQL, and times the log viewer the same way: the log page opened at its start, at line 400,000 and at
// its end, a chunk as htmx asks for it, and a search from line 400,000; and downloads the raw log once.
//
// Prints p50, p95, p99 and max of each. Targets: every inbox view under 300 ms and every log view under
// a second at p95. Exits 1 when one is missed. Everything it starts, it stops.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { freePort, startPlinthProcess, type PlinthProcess } from '../test/helpers/plinth-process.ts';

const STACKS = Number(process.env.BENCH_STACKS || 10_000);
const ENVIRONMENTS = Number(process.env.BENCH_ENVIRONMENTS || 20);
const RUNS = Number(process.env.BENCH_RUNS || 1_000_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES || 100);
const TARGET_P95_MS = 300;
const LOG_LINES = Number(process.env.BENCH_LOG_LINES || 500_000);
/** A log opens in under a second: each of its views, at p95. */
const LOG_TARGET_P95_MS = 1000;
/** Stacks created at once through the API while seeding. */
const SEED_CONCURRENCY = 8;

const say = (line: string) => process.stderr.write(`${line}\n`);

async function api(baseUrl: string, token: string, method: string, url: string, body?: unknown) {
  const res = await fetch(baseUrl + url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** Runs `work(i)` for i in [0, count) with `concurrency` at a time. */
async function inParallel(count: number, concurrency: number, work: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

/** Signs in to the console as its form does; returns the session cookie. */
async function signIn(baseUrl: string, token: string): Promise<string> {
  const form = await fetch(`${baseUrl}/sign-in`);
  const signInCookie = form.headers
    .getSetCookie()
    .find((c) => c.startsWith('plinth_sign_in='))!
    .split(';')[0];
  const signInToken = /name="_signin" value="([^"]+)"/.exec(await form.text())![1];
  const res = await fetch(`${baseUrl}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: signInCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ apiKey: token, _signin: signInToken }),
  });
  const session = res.headers.getSetCookie().find((c) => c.startsWith('plinth_session='));
  if (!session) throw new Error(`sign-in failed: ${res.status}`);
  return session.split(';')[0];
}

function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
  return { p50: at(50), p95: at(95), p99: at(99), max: sorted[sorted.length - 1], n: sorted.length };
}

async function seedRuns(databaseUrl: string, orgId: string, userId: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      `create temporary table bench_stacks as
         select row_number() over (order by s.id) - 1 as n, s.id, s.change_pipeline_id as pipeline_id,
                (select v.id from pipeline_versions v where v.pipeline_id = s.change_pipeline_id order by v.id desc limit 1) as version_id
           from stacks s where s.organization_id = $1`,
      [orgId],
    );
    await client.query(
      `update stacks set source = jsonb_build_object('ref', case when right(id, 1) in ('0') then 'release' else 'main' end) where organization_id = $1`,
      [orgId],
    );
    const { rows } = await client.query('select count(*)::int as count from bench_stacks');
    const stacks = rows[0].count as number;
    const started = performance.now();
    const batch = 100_000;
    for (let from = 1; from <= RUNS; from += batch) {
      const to = Math.min(RUNS, from + batch - 1);
      // Ids in newId()'s time-ordered hex form, older than any the server makes; one run every 30 s.
      await client.query(
        `insert into pipeline_runs (id, organization_id, pipeline_id, pipeline_version_id, stack_id, status, action, description,
                                    created_by_id, created_at, updated_at, started_at, completed_at, admitted_at, commit_sha)
         select '0180' || lpad(to_hex(g), 28, '0'), $1, s.pipeline_id, s.version_id, s.id,
                (case when g % 5000 = 0 then 'WAITING_FOR_APPROVAL' when g % 25 < 3 then 'FAILED' when g % 25 < 5 then 'CANCELLED' else 'SUCCEEDED' end),
                'apply', 'seeded run ' || g, $2,
                t, t, t, case when g % 5000 = 0 then null else t + interval '1 minute' end, t,
                md5(g::text) || left(md5((g + 1)::text), 8)
           from generate_series($3::int, $4::int) g
           join bench_stacks s on s.n = g % $5,
                lateral (select now() - interval '30 seconds' * ($6::int - g) as t) as at`,
        [orgId, userId, from, to, stacks, RUNS],
      );
      say(`  ${to} runs (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
    await client.query('analyze');
  } finally {
    await client.end();
  }
}

/** A log of LOG_LINES lines of the kind OpenTofu and builds print (one in ten coloured), `needle` near its end. */
async function seedLog(databaseUrl: string, stepExecutionId: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      `insert into step_logs (step_execution_id, seq, stream, line)
       select $1, g, case when g % 50 = 0 then 'stderr' else 'stdout' end,
              case when g = $2 - 100 then 'the needle we look for'
                   when g % 10 = 0 then E'\\x1b[32m+\\x1b[0m aws_instance.web[' || g || '] will be created'
                   else 'line ' || g || ': ' || md5(g::text) end
         from generate_series(1, $2::int) g`,
      [stepExecutionId, LOG_LINES],
    );
    await client.query('analyze step_logs');
  } finally {
    await client.end();
  }
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-bench-console-'));
  const token = `plk_bench_${randomBytes(24).toString('hex')}`;
  let plinth: PlinthProcess | undefined;
  try {
    say(`starting plinth api-server on an embedded PostgreSQL in ${dataDir} ...`);
    plinth = await startPlinthProcess(
      { PLINTH_DATA_DIR: dataDir, PLINTH_PG_PORT: String(await freePort()), PLINTH_ADMIN_TOKEN: token, LOG_LEVEL: 'warn' },
      { command: 'api-server', readyTimeoutMs: 180_000, discardStdout: true },
    );
    const base = plinth.baseUrl;
    const me = await api(base, token, 'GET', '/auth/whoami');
    const project = await api(base, token, 'POST', '/projects', { data: { givenId: 'bench', name: 'Bench' } });
    const environments: { id: string }[] = [];
    for (let i = 0; i < ENVIRONMENTS; i++)
      environments.push(await api(base, token, 'POST', '/environments', { data: { projectId: project.id, givenId: `env-${i}`, name: `Env ${i}` } }));

    say(`creating ${STACKS} stacks through the API ...`);
    const stackStart = performance.now();
    const stackIds: string[] = [];
    await inParallel(STACKS, SEED_CONCURRENCY, async (i) => {
      const environment = environments[i % ENVIRONMENTS];
      const stack = await api(base, token, 'POST', '/stacks', { data: { projectId: project.id, environmentId: environment.id, name: `stack-${i}` } });
      stackIds.push(stack.id);
      if ((i + 1) % 1000 === 0) say(`  ${i + 1} stacks (${((performance.now() - stackStart) / 1000).toFixed(0)} s)`);
    });

    say(`inserting ${RUNS} runs with SQL ...`);
    const password = readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
    const pgPort = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3]);
    const databaseUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/postgres`;
    await seedRuns(databaseUrl, me.organizationId, me.userId);

    const cookie = await signIn(base, token);
    const inbox = `/orgs/${me.organizationId}/runs`;
    const firstPage = await fetch(`${base}${inbox}`, { headers: { cookie } }).then((r) => r.text());
    const cursor = /href="[^"]*cursor=([^"&]+)"/.exec(firstPage)?.[1];
    if (!cursor) throw new Error('the inbox has no second page');
    const aStack = stackIds[0];
    const aCommit = (await api(base, token, 'GET', `/pipeline-runs?stackId=${aStack}&limit=1&order=desc`))[0]?.commitSha;
    const views: [string, string][] = [
      ['every run (no filter)', ''],
      ['needs approval', 'status=WAITING_FOR_APPROVAL'],
      ['failed', 'status=FAILED'],
      ['running (none)', 'status=RUNNING'],
      ['cancelled', 'status=CANCELLED'],
      ['one stack', `stackId=${aStack}`],
      ['one environment', `environmentId=${environments[3].id}`],
      ['started by me', `createdById=${me.userId}`],
      ['branch release', 'ref=release'],
      ['branch no stack tracks', 'ref=nowhere'],
      ['commit prefix (7 digits)', `commitSha=${String(aCommit).slice(0, 7)}`],
      ['second page', `cursor=${cursor}`],
    ];

    const timePages = async (list: [string, string][]) => {
      const timed: { name: string; samples: number[]; bytes: number }[] = [];
      for (const [name, url] of list) {
        const samples: number[] = [];
        let bytes = 0;
        for (let i = 0; i < SAMPLES; i++) {
          const start = performance.now();
          const res = await fetch(`${base}${url}`, { headers: { cookie } });
          const body = await res.text();
          samples.push(performance.now() - start);
          if (res.status !== 200) throw new Error(`${name}: ${res.status} ${body.slice(0, 300)}`);
          bytes = body.length;
        }
        timed.push({ name, samples, bytes });
      }
      return timed;
    };
    const results = await timePages(views.map(([name, query]) => [name, `${inbox}${query ? `?${query}` : ''}`]));

    say(`inserting a log of ${LOG_LINES} lines with SQL ...`);
    const logRun = await api(base, token, 'POST', `/stacks/${aStack}/pipeline-run`, { data: { description: 'a long log' } });
    const logStep = (await api(base, token, 'GET', `/pipeline-runs/${logRun.id}/step-executions`))[0];
    await seedLog(databaseUrl, logStep.id);
    const logUrl = `/orgs/${me.organizationId}/steps/${logStep.id}/logs`;
    const logResults = await timePages([
      [`open the log (${LOG_LINES} lines)`, logUrl],
      ['open it at line 400,000', `${logUrl}?after=399990`],
      ['its last lines', `${logUrl}?tail=1000`],
      ['the next chunk (htmx)', `/orgs/${me.organizationId}/steps/${logStep.id}/log-lines?after=250000&view=window&chunk=2`],
      ['find a line near its end', `${logUrl}?q=needle&after=400000`],
    ]);
    const rawStart = performance.now();
    const raw = await fetch(`${base}${logUrl}/raw`, { headers: { cookie } }).then((r) => r.arrayBuffer());
    const rawMs = performance.now() - rawStart;

    const f = (x: number) => x.toFixed(1).padStart(7);
    const missed: string[] = [];
    const print = (timed: typeof results, target: number) => {
      for (const { name, samples, bytes } of timed) {
        const p = percentiles(samples);
        console.log(`  ${name.padEnd(28)} p50 ${f(p.p50)}  p95 ${f(p.p95)}  p99 ${f(p.p99)}  max ${f(p.max)} ms  (${(bytes / 1024).toFixed(0)} KiB)`);
        if (p.p95 > target) missed.push(`${name} p95 ${p.p95.toFixed(1)} ms > ${target} ms`);
      }
    };
    console.log(
      `console runs inbox: ${STACKS} stacks in ${ENVIRONMENTS} environments, ${RUNS} runs; GET of the whole page, one client on loopback, client clock, ${SAMPLES} samples each`,
    );
    print(results, TARGET_P95_MS);
    console.log(`console log viewer: one step's log of ${LOG_LINES} lines; GET of the whole page or chunk, same client, ${SAMPLES} samples each`);
    print(logResults, LOG_TARGET_P95_MS);
    console.log(`  raw download of the whole log: ${(raw.byteLength / 1024 / 1024).toFixed(1)} MiB in ${(rawMs / 1000).toFixed(1)} s (one sample, no target)`);
    console.log(
      missed.length
        ? `targets missed: ${missed.join('; ')}`
        : `targets met: every inbox view under ${TARGET_P95_MS} ms and every log view under ${LOG_TARGET_P95_MS} ms at p95`,
    );
    process.exitCode = missed.length ? 1 : 0;
  } finally {
    await plinth?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
