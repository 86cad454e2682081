import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPlinth, PlinthApiError, PlinthTimeoutError, type LogLine, type Plinth } from '@plinth/sdk';
import { createStack, startEngineTestApp, triggerRun, waitForStep, type EngineTestApp } from './helpers/engine.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

describe('@plinth/sdk against a real Plinth on a real port', () => {
  let t: EngineTestApp;
  let baseUrl: string;
  let plinth: Plinth;
  let proxy: TcpProxy | undefined;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    plinth = createPlinth({ baseUrl, token: t.adminToken });
  });
  after(async () => {
    await proxy?.close();
    await t.close();
  });

  it('paginate walks every page of a list by its cursors', async () => {
    for (let i = 0; i < 5; i++) await plinth.api.POST('/projects', { body: { data: { givenId: `paged-${i}`, name: `Paged ${i}` } } });
    const pages = [];
    for await (const page of plinth.pages('/projects', { query: { limit: 2 } })) pages.push(page);
    assert.deepEqual(
      pages.map((p) => p.data.length),
      [2, 2, 1],
    );
    const ids = [];
    for await (const project of plinth.paginate('/projects', { query: { limit: 2 } })) ids.push(project.givenId);
    assert.deepEqual(ids.sort(), ['paged-0', 'paged-1', 'paged-2', 'paged-3', 'paged-4']);
  });

  it('a failed call is a PlinthApiError carrying the ErrorBody code, status and request id', async () => {
    const error = await plinth.runs.get('no-such-run').catch((e: unknown) => e);
    assert.ok(error instanceof PlinthApiError);
    assert.equal(error.status, 404);
    assert.equal(error.code, 'Api:PipelineRun:NOT_FOUND');
    assert.match(error.requestId ?? '', /^[0-9a-f-]{36}$/);
    const anonymous = await createPlinth({ baseUrl })
      .runs.get('x')
      .catch((e: unknown) => e);
    assert.ok(anonymous instanceof PlinthApiError && anonymous.isUnauthenticated);
  });

  it('runs.wait returns the run at the status waited for, and times out with a PlinthTimeoutError', async () => {
    const gated = await createStack(t, [{ id: 'gate', type: 'approval' }]);
    const run = await triggerRun(t, gated.id);
    const timedOut = await plinth.runs.wait(run.id, { timeoutMs: 300, intervalMs: 50 }).catch((e: unknown) => e);
    assert.ok(timedOut instanceof PlinthTimeoutError);
    const waiting = await plinth.runs.wait(run.id, { until: ['WAITING_FOR_APPROVAL'], intervalMs: 50 });
    assert.equal(waiting.status, 'WAITING_FOR_APPROVAL');
    await plinth.api.POST('/pipeline-runs/{id}/cancel', { params: { path: { id: run.id } } });
    assert.equal((await plinth.runs.wait(run.id, { intervalMs: 50 })).status, 'CANCELLED');
  });

  it('logs.follow resumes a cut stream with Last-Event-ID: every line once, in order, then the final status', async () => {
    proxy = await startTcpProxy(Number(new URL(baseUrl).port));
    const viaProxy = createPlinth({ baseUrl: `http://127.0.0.1:${proxy.port}`, token: t.adminToken });
    const stack = await createStack(t, [{ id: 'count', command: 'for i in $(seq 1 30); do echo line-$i; sleep 0.05; done' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'count', 'RUNNING');
    const seen: LogLine[] = [];
    let reconnects = 0;
    const follow = viaProxy.logs.follow(step.id, { onReconnect: () => reconnects++ });
    let status: string | undefined;
    for (;;) {
      const next = await follow.next();
      if (next.done) {
        status = next.value;
        break;
      }
      seen.push(next.value);
      if (seen.length === 5) void proxy.cut(200);
    }
    assert.ok(reconnects >= 1, 'the stream was resumed');
    assert.equal(status, 'SUCCEEDED');
    assert.deepEqual(
      seen.map((l) => l.line),
      Array.from({ length: 30 }, (_, i) => `line-${i + 1}`),
    );
    assert.deepEqual(
      seen.map((l) => l.seq),
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    const stored = [];
    for await (const line of plinth.logs.lines(step.id)) stored.push(line.line);
    assert.equal(stored.length, 30);
  });
});
