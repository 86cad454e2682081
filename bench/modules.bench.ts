// npm run bench:modules: the module catalogue at the size of a large environment.
//
// Starts the real CLI (`plinth api-server`) on an embedded PostgreSQL in a temporary data directory and the
// tests' Git server (a real repository over smart HTTP) on loopback, publishes two module versions from it,
// and seeds one environment with BENCH_INSTANCES (1,000) instances holding 2 references each (2,000: each
// instance references the one before it and the one at half its index; the first references an instance
// of another environment twice). Then, on loopback with one client, it measures from the client's clock:
//
// - graph: GET /environments/{id}/module-graph of that environment, BENCH_SAMPLES (200) times;
// - create: POST /module-instances of a version with 30 inputs (strings with patterns, dropdowns, numbers
//   with ranges, booleans, show_when, defaults), in an environment of its own, BENCH_SAMPLES times:
//   the whole create, its stack and two pipelines included;
// - validate: the same POST with values that break 30 rules: the evaluation and its 422, no writes.
//
// Prints p50, p95, p99 and max of each phase. Targets: graph under 100 ms at p95; validation of an
// instance with 30 inputs under 20 ms at p95 (checked on the validate phase, and printed for create).
// Exits 1 when a target is missed. Everything it starts, it stops.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startGitServer, type GitServer } from '../test/helpers/git-server.ts';
import { commitModules } from '../test/helpers/modules.ts';
import { freePort, startPlinthProcess, type PlinthProcess } from '../test/helpers/plinth-process.ts';

const INSTANCES = Number(process.env.BENCH_INSTANCES || 1000);
const SAMPLES = Number(process.env.BENCH_SAMPLES || 200);
const TARGETS = { graphP95Ms: 100, validateP95Ms: 20 };

const say = (line: string) => process.stderr.write(`${line}\n`);

interface Api {
  call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>;
}

function apiOf(baseUrl: string, token: string): Api {
  return {
    async call(method, url, body) {
      const res = await fetch(`${baseUrl}${url}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
  };
}

async function must(api: Api, method: string, url: string, body?: unknown, status = 201) {
  const res = await api.call(method, url, body);
  if (res.status !== status) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body?.data;
}

/** Thirty inputs of the kinds a real module has, and values that satisfy each (or break each). */
function wideInputs() {
  const inputs: Record<string, unknown>[] = [];
  const good: Record<string, unknown> = {};
  const bad: Record<string, unknown> = {};
  for (let i = 0; i < 30; i++) {
    const id = `input_${i}`;
    switch (i % 5) {
      case 0:
        inputs.push({ id, label: `Name ${i}`, type: 'string', required: true, patterns: [{ pattern: '^[a-z][a-z0-9-]{2,40}$', message: 'a DNS label' }] });
        good[id] = `name-${i}`;
        bad[id] = `Not Valid ${i}`;
        break;
      case 1:
        inputs.push({ id, label: `Size ${i}`, type: 'string', values: [{ value: 'small' }, { value: 'medium' }, { value: 'large' }], default: 'small' });
        good[id] = 'medium';
        bad[id] = 'huge';
        break;
      case 2:
        inputs.push({ id, label: `Count ${i}`, type: 'number', min: 1, max: 100, integer: true });
        good[id] = 3;
        bad[id] = 1000;
        break;
      case 3:
        inputs.push({ id, label: `Flag ${i}`, type: 'boolean', default: false });
        good[id] = true;
        bad[id] = 'yes';
        break;
      case 4:
        inputs.push({ id, label: `Detail ${i}`, type: 'string', required: true, show_when: { [`input_${i - 1}`]: true }, min_current_value: false });
        good[id] = `detail ${i}`;
        bad[id] = 42;
        break;
    }
  }
  return { inputs, good, bad };
}

function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
  return { p50: at(50), p95: at(95), p99: at(99), max: sorted[sorted.length - 1], n: sorted.length };
}

function line(name: string, samples: number[]) {
  const p = percentiles(samples);
  const f = (x: number) => x.toFixed(1).padStart(7);
  return `  ${name.padEnd(48)} p50 ${f(p.p50)}  p95 ${f(p.p95)}  p99 ${f(p.p99)}  max ${f(p.max)} ms  (n ${p.n})`;
}

async function timed(samples: number[], run: () => Promise<void>) {
  const start = performance.now();
  await run();
  samples.push(performance.now() - start);
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-bench-modules-'));
  const token = `plk_bench_${randomBytes(24).toString('hex')}`;
  let plinth: PlinthProcess | undefined;
  let git: GitServer | undefined;
  try {
    git = await startGitServer();
    commitModules(git);
    say(`starting plinth api-server on an embedded PostgreSQL in ${dataDir} ...`);
    plinth = await startPlinthProcess(
      // The publish's snapshot reaches the Git server on loopback, as an operator allows a self-hosted one.
      {
        PLINTH_DATA_DIR: dataDir,
        PLINTH_PG_PORT: String(await freePort()),
        PLINTH_ADMIN_TOKEN: token,
        LOG_LEVEL: 'warn',
        PLINTH_STEP_EGRESS_ALLOW: '127.0.0.1',
      },
      { command: 'api-server', readyTimeoutMs: 180_000 },
    );
    const api = apiOf(plinth.baseUrl, token);
    const codeSource = await must(api, 'POST', '/code-sources', { data: { name: 'modules', url: git.repoUrl('public') } });
    const project = await must(api, 'POST', '/projects', { data: { givenId: 'bench', name: 'Bench' } });
    const env = (givenId: string) => must(api, 'POST', '/environments', { data: { projectId: project.id, givenId, name: givenId } });
    const [big, other, forms] = [await env('big'), await env('other'), await env('forms')];
    const publish = async (type: string, modulePath: string, inputs: unknown[], outputs: unknown[]) => {
      const definition = await must(api, 'POST', '/module-definitions', { data: { type, name: type } });
      return must(api, 'POST', '/module-versions', {
        data: { moduleDefinitionId: definition.id, version: '1.0.0', source: { codeSourceId: codeSource.id, ref: 'main', path: modulePath }, inputs, outputs },
      });
    };
    const node = await publish(
      'bench/node',
      'modules/service',
      [
        { id: 'first', label: 'First', type: 'string' },
        { id: 'second', label: 'Second', type: 'string' },
      ],
      [{ name: 'out' }],
    );
    const wide = wideInputs();
    const wideVersion = await publish('bench/wide', 'modules/network', wide.inputs, []);

    say(`seeding ${INSTANCES} instances with ${2 * INSTANCES} references ...`);
    const external = await must(api, 'POST', '/module-instances', {
      data: { environmentId: other.id, moduleVersionId: node.id, givenId: 'external', name: 'external', values: {} },
    });
    const ref = (instance: string) => ({ $ref: { instance, output: 'out' } });
    const seedStart = performance.now();
    for (let i = 0; i < INSTANCES; i++) {
      const values = i === 0 ? { first: ref(external.id), second: ref(external.id) } : { first: ref(`n${i - 1}`), second: ref(`n${Math.floor(i / 2)}`) };
      await must(api, 'POST', '/module-instances', { data: { environmentId: big.id, moduleVersionId: node.id, givenId: `n${i}`, name: `n${i}`, values } });
      if ((i + 1) % 250 === 0) say(`  ${i + 1} instances (${((performance.now() - seedStart) / (i + 1)).toFixed(1)} ms each)`);
    }
    const graph = await must(api, 'GET', `/environments/${big.id}/module-graph`, undefined, 200);
    say(`graph: ${graph.nodes.length} nodes, ${graph.edges.length} edges`);

    const graphMs: number[] = [];
    for (let i = 0; i < SAMPLES; i++) await timed(graphMs, async () => void (await must(api, 'GET', `/environments/${big.id}/module-graph`, undefined, 200)));
    const createMs: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const data = { environmentId: forms.id, moduleVersionId: wideVersion.id, givenId: `w${i}`, name: `w${i}`, values: wide.good };
      await timed(createMs, async () => void (await must(api, 'POST', '/module-instances', { data })));
    }
    const validateMs: number[] = [];
    let problems = 0;
    for (let i = 0; i < SAMPLES; i++) {
      const data = { environmentId: forms.id, moduleVersionId: wideVersion.id, givenId: `bad${i}`, name: `bad${i}`, values: wide.bad };
      await timed(validateMs, async () => {
        const res = await api.call('POST', '/module-instances', { data });
        if (res.status !== 422) throw new Error(`expected 422, got ${res.status} ${JSON.stringify(res.body)}`);
        problems = res.body.details[0].items.length;
      });
    }

    const graphP = percentiles(graphMs);
    const validateP = percentiles(validateMs);
    console.log(`module catalogue (${INSTANCES} instances, ${graph.edges.length} references; one client on loopback; client clock)`);
    console.log(line(`graph: GET module-graph (${graph.nodes.length} nodes)`, graphMs));
    console.log(line('create: POST module-instances, 30 inputs (201)', createMs));
    console.log(line(`validate: the same, ${problems} problems (422)`, validateMs));
    const missed = [
      ...(graphP.p95 > TARGETS.graphP95Ms ? [`graph p95 ${graphP.p95.toFixed(1)} ms > ${TARGETS.graphP95Ms} ms`] : []),
      ...(validateP.p95 > TARGETS.validateP95Ms ? [`validation p95 ${validateP.p95.toFixed(1)} ms > ${TARGETS.validateP95Ms} ms`] : []),
    ];
    console.log(
      missed.length
        ? `targets missed: ${missed.join('; ')}`
        : `targets met: graph p95 < ${TARGETS.graphP95Ms} ms, validation p95 < ${TARGETS.validateP95Ms} ms`,
    );
    process.exitCode = missed.length ? 1 : 0;
  } finally {
    await plinth?.stop();
    await git?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
