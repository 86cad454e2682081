// npm run bench:patterns: how fast the API answers a request whose values meet 1,000 hostile patterns.
//
// Starts the real CLI (`plinth api-server`) on an embedded PostgreSQL in a temporary data directory. Each
// sample is a schema of 50 string inputs with 20 patterns each, every one a shape that backtracks
// catastrophically in a backtracking engine (`(a+)+$`, `(a|aa)+$`, …) made distinct by the sample, so
// that each definition compiles all of its 1,000 patterns afresh (test/helpers/hostile-patterns.ts):
//
// - default: POST /default-value-definitions with a default that fails all 1,000 patterns (422);
// - write: POST /default-value-definitions of the same schema without a default (201): compiles them;
// - check: POST /default-values with that value against the stored definition (422): its patterns,
//   compiled by `write`, are kept compiled.
//
// BENCH_WARMUP (10) default requests go first and are not counted: they meet code V8 has not compiled
// yet. Then BENCH_SAMPLES (50) of each phase, one client on loopback, from the client's monotonic
// clock. Prints p50, p99 and max of each phase. Target: each answers in under 100 ms at p99. Exits 1
// when missed. Everything it starts, it stops.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { hostileSchema, INPUTS, PATTERNS_PER_INPUT } from '../test/helpers/hostile-patterns.ts';
import { freePort, startPlinthProcess, type PlinthProcess } from '../test/helpers/plinth-process.ts';

const SAMPLES = Number(process.env.BENCH_SAMPLES || 50);
const WARMUP = Number(process.env.BENCH_WARMUP || 10);
const TARGET_P99_MS = 100;

const say = (line: string) => process.stderr.write(`${line}\n`);

async function call(baseUrl: string, token: string, url: string, body: unknown) {
  const res = await fetch(`${baseUrl}${url}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
  return { p50: at(50), p99: at(99), max: sorted[sorted.length - 1], n: sorted.length };
}

function line(name: string, samples: number[]) {
  const p = percentiles(samples);
  const f = (x: number) => x.toFixed(1).padStart(7);
  return `  ${name.padEnd(52)} p50 ${f(p.p50)}  p99 ${f(p.p99)}  max ${f(p.max)} ms  (n ${p.n})`;
}

/** timed answers how long `run` took, on the monotonic clock, after checking the status it got. */
async function timed(status: number, run: () => Promise<{ status: number; body: any }>) {
  const started = performance.now();
  const res = await run();
  const ms = performance.now() - started;
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
  return { ms, body: res.body };
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-bench-patterns-'));
  const token = `plk_bench_${randomBytes(24).toString('hex')}`;
  let plinth: PlinthProcess | undefined;
  try {
    say(`starting plinth api-server on an embedded PostgreSQL in ${dataDir} ...`);
    plinth = await startPlinthProcess(
      { PLINTH_DATA_DIR: dataDir, PLINTH_PG_PORT: String(await freePort()), PLINTH_ADMIN_TOKEN: token, LOG_LEVEL: 'warn' },
      { command: 'api-server', readyTimeoutMs: 180_000 },
    );
    const baseUrl = plinth.baseUrl;
    const whoami = await (await fetch(`${baseUrl}/auth/whoami`, { headers: { authorization: `Bearer ${token}` } })).json();
    const orgId = whoami.data.organizationId;
    const definition = (givenId: string, schema: unknown) => call(baseUrl, token, '/default-value-definitions', { data: { givenId, name: givenId, schema } });

    for (let i = 0; i < WARMUP; i++) {
      const { schema, value } = hostileSchema(`warm${i}`);
      await timed(422, () => definition(`warm${i}`, { ...schema, default: value }));
    }
    const phases = { default: [] as number[], write: [] as number[], check: [] as number[] };
    let problems = 0;
    for (let i = 0; i < SAMPLES; i++) {
      const withDefault = hostileSchema(`default${i}`);
      const refused = await timed(422, () => definition(`default${i}`, { ...withDefault.schema, default: withDefault.value }));
      phases.default.push(refused.ms);
      problems = refused.body.details[0].items.length;
      const stored = hostileSchema(`stored${i}`);
      const written = await timed(201, () => definition(`stored${i}`, stored.schema));
      phases.write.push(written.ms);
      const checked = await timed(422, () =>
        call(baseUrl, token, '/default-values', { data: { defaultValueDefinitionId: written.body.data.id, parentId: orgId, value: stored.value } }),
      );
      phases.check.push(checked.ms);
    }

    console.log(
      `hostile patterns: ${INPUTS * PATTERNS_PER_INPUT} fresh patterns per request, ${problems} failed per refused value; one client on loopback; client clock`,
    );
    console.log(line('default: definition with a default failing all (422)', phases.default));
    console.log(line('write: definition compiling all (201)', phases.write));
    console.log(line('check: value against a stored definition (422)', phases.check));
    const missed = Object.entries(phases).filter(([, samples]) => percentiles(samples).p99 >= TARGET_P99_MS);
    console.log(`target p99 < ${TARGET_P99_MS} ms for each phase: ${missed.length ? `MISSED (${missed.map(([name]) => name).join(', ')})` : 'met'}`);
    process.exitCode = missed.length ? 1 : 0;
  } finally {
    await plinth?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
