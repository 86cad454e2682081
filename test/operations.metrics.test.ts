import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { sampleQueueGauges } from '../src/engine/queue-gauges.ts';
import { startProcessMetrics } from '../src/platform/metrics/process-metrics.ts';
import { metricsPort, startMetricsServer } from '../src/platform/metrics/server.ts';
import { createTestDatabase } from './helpers/database.ts';
import { createStack, FAST_ENGINE_ENV, startEngineTestApp, triggerRun, waitForRunStatus, waitForStep, type EngineTestApp } from './helpers/engine.ts';
import { freePort, PLINTH_BIN, ROOT, startPlinthProcess } from './helpers/plinth-process.ts';

/** The value of one sample of the scrape, 0 when absent: `name{labels} value`. */
function sample(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('Prometheus metrics', () => {
  let t: EngineTestApp;
  let server: Server;
  let url: string;
  const token = 'metrics-token-for-the-test';
  before(async () => {
    t = await startEngineTestApp({ requestMetrics: true });
    await t.startWorker();
    server = await startProcessMetrics(t.db, { host: '127.0.0.1', port: 0, token, commit: 'abc123' });
    url = `http://127.0.0.1:${metricsPort(server)}/metrics`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await t.close();
  });

  const scrape = async () => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    return res.text();
  };

  it('refuses a scrape without the metrics token, and a tenant API key is not one', async () => {
    assert.equal((await fetch(url)).status, 401);
    assert.equal((await fetch(url, { headers: { authorization: `Bearer ${t.adminToken}` } })).status, 401);
    assert.equal((await fetch(url.replace('/metrics', '/other'))).status, 404);
  });

  it('off loopback the metrics listener needs its token: plinth refuses to start without one', async () => {
    const started = spawnSync(process.execPath, [PLINTH_BIN, 'api-server'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, PLINTH_METRICS_PORT: '0', PLINTH_METRICS_HOST: '0.0.0.0', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(started.status, 1, started.stderr);
    assert.match(started.stderr, /PLINTH_METRICS_HOST is 0\.0\.0\.0, which is not loopback: set PLINTH_METRICS_TOKEN/);
    await assert.rejects(startMetricsServer({ host: '0.0.0.0', port: 0 }), /not loopback/);
    const exposed = await startMetricsServer({ host: '0.0.0.0', port: 0, token });
    try {
      const at = `http://127.0.0.1:${metricsPort(exposed)}/metrics`;
      assert.equal((await fetch(at)).status, 401);
      assert.equal((await fetch(at, { headers: { authorization: `Bearer ${token}` } })).status, 200);
    } finally {
      await new Promise((resolve) => exposed.close(resolve));
    }
  });

  it('off loopback with its token, a process that runs a worker starts and serves the scrape', async () => {
    const database = await createTestDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-metrics-'));
    const port = await freePort();
    // The token is scrubbed from the environment once read: the worker's settings must not read it again.
    const plinth = await startPlinthProcess(
      {
        ...FAST_ENGINE_ENV,
        DATABASE_URL: database.url,
        PLINTH_DATA_DIR: dir,
        PLINTH_METRICS_PORT: String(port),
        PLINTH_METRICS_HOST: '0.0.0.0',
        PLINTH_METRICS_TOKEN: token,
      },
      { readyTimeoutMs: 120_000 },
    );
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
    } finally {
      await plinth.stop();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after a run, shows its counts and histograms, request latency by route template, and no ids', async () => {
    const before = await scrape();
    const stack = await createStack(t, [
      { id: 'plan', command: 'echo planning' },
      { id: 'flaky', command: 'exit 1', needs: ['plan'], retry: { maxAttempts: 2 } },
    ]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'FAILED');
    const text = await scrape();
    const delta = (name: string, labels = '') => sample(text, name, labels) - sample(before, name, labels);

    assert.equal(delta('plinth_runs_total', 'trigger="api",outcome="FAILED"'), 1);
    assert.equal(delta('plinth_run_duration_seconds_count'), 1);
    assert.equal(delta('plinth_run_queue_wait_seconds_count'), 1);
    assert.equal(delta('plinth_step_executions_total', 'step_type="script",outcome="SUCCEEDED"'), 1);
    assert.equal(delta('plinth_step_executions_total', 'step_type="script",outcome="FAILED"'), 2, 'both attempts of the flaky step');
    assert.equal(delta('plinth_step_duration_seconds_count', 'step_type="script"'), 3);
    assert.equal(delta('plinth_step_retries_total'), 1);
    assert.ok(delta('http_request_duration_seconds_count', 'method="POST",route="/stacks/:id/pipeline-run",status_code="201"') >= 1, text);
    assert.match(text, /plinth_build_info\{version="0\.0\.0",commit="abc123"\} 1/);
    assert.match(text, /nodejs_eventloop_lag_seconds /);
    assert.match(text, /nodejs_heap_size_used_bytes /);
    assert.match(text, /plinth_db_pool_connections\{state="idle"\} \d+/);
    assert.match(text, /plinth_workers\{state="idle"\} \d+/);
    for (const id of [run.id, stack.id, t.adminToken]) assert.equal(text.includes(id), false, `the scrape names ${id}`);
  });

  it('samples the queue: unfinished runs by status and pending approvals', async () => {
    const stack = await createStack(t, [{ id: 'gate', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    await waitForStep(t, run.id, 'gate', 'WAITING_FOR_APPROVAL');
    await sampleQueueGauges(t.db);
    const text = await scrape();
    assert.equal(sample(text, 'plinth_approvals_pending'), 1);
    assert.equal(sample(text, 'plinth_runs_current', 'status="WAITING_FOR_APPROVAL"'), 1);
    assert.match(text, /plinth_queue_jobs\{state="ready"\} \d+/);
    assert.match(text, /plinth_queue_oldest_ready_age_seconds \d/);
  });
});
