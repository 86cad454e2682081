import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Principal } from '../src/platform/auth/principal.ts';
import { followLogs } from '../src/runs/step-logs.service.ts';
import { createStack, startEngineTestApp, triggerRun, waitFor, waitForRunStatus, waitForStep, type EngineTestApp } from './helpers/engine.ts';

describe('step logs', () => {
  let t: EngineTestApp;
  let baseUrl: string;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => t.close());

  it('lines of a running step are readable while it runs, by sequence number, stdout and stderr both', async () => {
    const stack = await createStack(t, [{ id: 'talk', command: 'echo one; echo oops >&2; sleep 1.5; echo two' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'talk', 'RUNNING');
    const early = await waitFor('the first lines', async () => {
      const res = await t.call('GET', `/pipeline-step-executions/${step.id}/logs`);
      return res.body.data.length >= 2 ? res.body : undefined;
    });
    assert.equal(early.meta.complete, false);
    assert.equal(early.meta.stepStatus, 'RUNNING');
    assert.deepEqual(
      early.data.map((l: any) => [l.seq, l.stream, l.line]),
      [
        [1, 'stdout', 'one'],
        [2, 'stderr', 'oops'],
      ],
    );

    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const rest = await t.call('GET', `/pipeline-step-executions/${step.id}/logs?after=${early.meta.lastSeq}`);
    assert.deepEqual(
      rest.body.data.map((l: any) => [l.seq, l.line]),
      [[3, 'two']],
    );
    assert.equal(rest.body.meta.complete, true);
  });

  it('follow mode streams new lines as Server-Sent Events while the step runs and ends when it completes', async () => {
    const stack = await createStack(t, [{ id: 'talk', command: 'echo one; sleep 1; echo two; sleep 1; echo three' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'talk', 'RUNNING');
    const res = await fetch(`${baseUrl}/pipeline-step-executions/${step.id}/logs`, {
      headers: { authorization: `Bearer ${t.adminToken}`, accept: 'text/event-stream' },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const decoder = new TextDecoder();
    let text = '';
    let statusWhenFirstLineArrived: string | undefined;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk);
      if (statusWhenFirstLineArrived === undefined && text.includes('"line":"one"')) {
        statusWhenFirstLineArrived = (await t.call('GET', `/pipeline-step-executions/${step.id}`)).body.data.status;
      }
    }
    assert.equal(statusWhenFirstLineArrived, 'RUNNING', 'the first line arrived while the step was still running');
    const events = text.trim().split('\n\n');
    const lines = events.filter((e) => e.startsWith('event: line')).map((e) => JSON.parse(e.split('\ndata: ')[1]).line);
    assert.deepEqual(lines, ['one', 'two', 'three']);
    assert.match(events.at(-1)!, /^event: end\ndata: \{"status":"SUCCEEDED"\}$/);
  });

  it('?follow=true resumes after Last-Event-ID, which wins over after, and an unknown step is a 404 ErrorBody', async () => {
    const stack = await createStack(t, [{ id: 'talk', command: 'echo a; echo b; echo c' }]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const step = await waitForStep(t, run.id, 'talk', 'SUCCEEDED');
    const res = await fetch(`${baseUrl}/pipeline-step-executions/${step.id}/logs?follow=true`, {
      headers: { authorization: `Bearer ${t.adminToken}`, 'last-event-id': '1' },
    });
    const text = await res.text();
    assert.deepEqual(
      [...text.matchAll(/"line":"(\w)"/g)].map((m) => m[1]),
      ['b', 'c'],
    );
    // A client reconnecting to the URL it opened with `after` resumes from its Last-Event-ID; a page read keeps to `after`.
    const reconnected = await fetch(`${baseUrl}/pipeline-step-executions/${step.id}/logs?follow=true&after=0`, {
      headers: { authorization: `Bearer ${t.adminToken}`, 'last-event-id': '2' },
    });
    assert.deepEqual(
      [...(await reconnected.text()).matchAll(/"line":"(\w)"/g)].map((m) => m[1]),
      ['c'],
    );
    const page = await t.call('GET', `/pipeline-step-executions/${step.id}/logs?after=1`, { headers: { 'last-event-id': '2' } });
    assert.deepEqual(
      page.body.data.map((l: { line: string }) => l.line),
      ['b', 'c'],
    );
    const missing = await t.call('GET', '/pipeline-step-executions/nope/logs?follow=true');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'Api:StepExecution:NOT_FOUND');
  });

  it('a follow stream ends when its time is up, with a reconnect event after the lines it sent, while the step waits on', async () => {
    const stack = await createStack(t, [{ id: 'wait', command: 'echo first; sleep 30' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'wait', 'RUNNING');
    const whoami = await t.call('GET', '/auth/whoami');
    const principal = { ...whoami.body.data, role: 'VIEWER' } as Principal;
    await waitFor('the first line', async () => ((await t.call('GET', `/pipeline-step-executions/${step.id}/logs`)).body.data.length ? true : undefined));
    const sent: string[] = [];
    const startedAt = Date.now();
    await followLogs(
      t.db,
      principal,
      step.id,
      0,
      {
        line: async (l) => void sent.push(`line ${l.line}`),
        keepAlive: async () => {},
        end: (status) => void sent.push(`end ${status}`),
        reconnect: () => void sent.push('reconnect'),
        closed: () => false,
      },
      { pollMs: 50, maxMs: 600 },
    );
    assert.ok(Date.now() - startedAt < 5_000, 'it ended at its time limit, not with the step');
    assert.deepEqual(sent, ['line first', 'reconnect']);
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
  });
});
