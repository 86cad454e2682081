import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { startEngineTestApp, type EngineTestApp } from './helpers/engine.ts';
import { fuzzRequest, type FuzzRequest, type IdPool } from './fuzz/arbitraries.ts';
import { operationsOf, type OpenApiDoc } from './fuzz/openapi.ts';
import { Responsiveness } from './fuzz/responsiveness.ts';
import { seedTwoOrganizations, type Callers } from './fuzz/setup.ts';

/**
 * The fuzz suite: every operation of the published /openapi.json, called as several roles with a
 * request its schema would accept plus one hostile change. `npm test` runs a fixed seed (FUZZ_SEED,
 * FUZZ_RUNS); `npm run fuzz` runs many more with a fresh seed, printed so a failure can be replayed.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 4000);
const MAX_EVENT_LOOP_DELAY_MS = 100;
const MAX_HEALTH_MS = 200;
const ERROR_CODE = /^[A-Z][A-Za-z]*:[A-Z][A-Za-z]*:[A-Z][A-Z_]*$/;

describe(`fuzz: every operation of /openapi.json with hostile values (seed ${SEED}, ${RUNS} runs)`, () => {
  let t: EngineTestApp;
  let doc: OpenApiDoc;
  let ids: IdPool;
  let callers: Callers;
  let pipeline: { id: string; versionId: string };
  before(async () => {
    t = await startEngineTestApp();
    doc = (await t.call('GET', '/openapi.json', { token: null })).body;
    const seeded = await seedTwoOrganizations(t);
    ids = { own: Object.values(seeded.own.ids), foreign: Object.values(seeded.foreign.ids) };
    callers = seeded.callers;
    pipeline = { id: seeded.own.ids.pipeline, versionId: seeded.own.ids.pipelineVersion };
  });

  /**
   * fast-json-stringify serializes a union (a pipeline config's steps) by validating each branch with
   * ajv, which compiles that branch the first time an answer meets it: some 50 to 120 ms on these
   * machines, once per route and process. The sampled requests of the warm-up are mostly refused, so
   * these routes are warmed with answers that carry a config.
   */
  const warmConfigSerializers = async () => {
    const headers = { authorization: `Bearer ${callers.superAdmin}`, 'content-type': 'application/json' };
    const answers = [
      await t.app.inject({ method: 'GET', url: `/pipeline-versions?pipelineId=${pipeline.id}`, headers }),
      await t.app.inject({ method: 'GET', url: `/pipeline-versions/${pipeline.versionId}`, headers }),
      await t.app.inject({
        method: 'POST',
        url: '/pipeline-versions',
        headers,
        payload: JSON.stringify({
          data: { pipelineId: pipeline.id, config: { steps: [{ id: 'warm', name: 'Warm', type: 'script', with: { command: 'true' } }] } },
        }),
      }),
    ];
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      [200, 200, 201],
      answers.map((a) => a.body.slice(0, 300)).join('\n'),
    );
  };
  after(() => t.close());

  const send = (request: FuzzRequest, token: string | null) => {
    const headers = { ...request.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) };
    return t.app.inject({ method: request.method, url: request.url, headers, payload: request.payload });
  };

  it('never a 5xx; every status one the document lists; every 4xx an ErrorBody with a documented code; the event loop never blocked; /health answers', async () => {
    const operations = operationsOf(doc);
    assert.ok(operations.length > 40, `only ${operations.length} operations`);
    const tokens = [callers.superAdmin, callers.member, callers.viewer, callers.foreignOwner, null];

    const requests = fc.oneof(...operations.map((op) => fuzzRequest(doc, op, ids)));
    // Each route's validator and serializer are compiled by V8 on first use: warm them before measuring.
    for (const op of operations) {
      const [request] = fc.sample(fuzzRequest(doc, op, ids), { seed: SEED, numRuns: 1 });
      await send(request, callers.superAdmin);
    }

    await warmConfigSerializers();

    // Open every pooled connection now: on a busy machine a new one takes seconds to authenticate.
    await Promise.all(Array.from({ length: 10 }, () => t.app.inject({ method: 'GET', url: '/health' })));

    const loop = new Responsiveness();
    let healthMax = 0;
    let healthCalls = 0;
    let inFlight = '';
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const started = performance.now();
        const res = await t.app.inject({ method: 'GET', url: '/health' });
        assert.equal(res.statusCode, 200);
        healthMax = Math.max(healthMax, performance.now() - started);
        if (performance.now() - started > MAX_HEALTH_MS && !loop.overloaded)
          process.stdout.write(`slow /health ${(performance.now() - started).toFixed(0)} ms during ${inFlight}\n`);
        healthCalls++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    loop.start();
    const started = Date.now();
    const counts = new Map<number, number>();
    try {
      await fc.assert(
        fc.asyncProperty(requests, fc.constantFrom(...tokens), async (request, token) => {
          inFlight = `${request.method} ${request.url.slice(0, 100)} ${request.change.slice(0, 100)}`;
          const sentAt = performance.now();
          const res = await send(request, token);
          const ms = performance.now() - sentAt;
          if (ms > MAX_EVENT_LOOP_DELAY_MS && !loop.overloaded) process.stdout.write(`slow request ${ms.toFixed(0)} ms: ${inFlight} → ${res.statusCode}\n`);
          counts.set(res.statusCode, (counts.get(res.statusCode) ?? 0) + 1);
          const what = `${request.method} ${request.url.slice(0, 200)} change=${request.change} → ${res.statusCode} ${res.body.slice(0, 500)}`;
          assert.ok(res.statusCode < 500, what);
          if (res.statusCode >= 400) {
            const body = JSON.parse(res.body);
            assert.match(body.code, ERROR_CODE, what);
            assert.equal(typeof body.message, 'string', what);
            assert.equal(body.requestId, res.headers['x-request-id'], what);
            // A hostile path (`..`, an encoded slash) can lead to another route, or to none: not this operation's answer.
            const routed = body.code !== 'Api:Route:NOT_FOUND' && body.code !== 'Api:Request:METHOD_NOT_ALLOWED';
            if (routed) assert.ok(request.documented.includes(String(res.statusCode)), `${what}: the document does not list ${res.statusCode} for it`);
          }
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
      );
    } finally {
      sampling = false;
      loop.stop();
      await sampler;
    }
    process.stdout.write(
      `fuzz: ${RUNS} requests in ${Date.now() - started} ms, statuses ${JSON.stringify(Object.fromEntries(counts))}, ` +
        `${loop.describe()}, /health max ${healthMax.toFixed(1)} ms over ${healthCalls} calls\n`,
    );
    assert.ok(healthCalls > 0);
    if (!loop.overloaded) {
      assert.ok(loop.maxDelayMs < MAX_EVENT_LOOP_DELAY_MS, `the event loop was blocked for ${loop.maxDelayMs.toFixed(1)} ms`);
      assert.ok(healthMax < MAX_HEALTH_MS, `/health took ${healthMax.toFixed(1)} ms`);
    } else {
      // On a machine busier than its cores (a shared box), wall-clock delays are the scheduler's: what this
      // process itself kept the loop busy for is still held to the limit, and /health to a looser one.
      assert.ok(loop.cpuBlockedMs < MAX_EVENT_LOOP_DELAY_MS, `the event loop was kept busy for ${loop.cpuBlockedMs.toFixed(1)} ms`);
      assert.ok(healthMax < MAX_HEALTH_MS * 10, `/health took ${healthMax.toFixed(1)} ms`);
    }
  });
});
