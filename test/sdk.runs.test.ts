import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPlinth, PlinthApiError, type Plinth, type ReconnectEvent, type RunLogLine } from '@plinth/sdk';
import { loadConfig } from '../src/platform/config.ts';
import { buildApp, type App } from '../src/platform/http/app.ts';
import { ROUTES } from '../src/routes.ts';
import { TEST_SECRETS } from './helpers/app.ts';
import { createStack, startEngineTestApp, waitForStep, type EngineTestApp } from './helpers/engine.ts';

/** A script step that prints `<prefix>-1` … `<prefix>-<count>`, `pause` seconds apart. */
const counting = (id: string, prefix: string, count: number, pause = 0, needs?: string[]) => ({
  id,
  command: `for i in $(seq 1 ${count}); do echo ${prefix}-$i; sleep ${pause}; done`,
  ...(needs ? { needs } : {}),
});

/** The lines of each step, in the order they came, and the order in which the steps came. */
function byStep(lines: RunLogLine[]) {
  const order: string[] = [];
  const of: Record<string, string[]> = {};
  for (const l of lines) {
    if (order.at(-1) !== l.step.stepId) order.push(l.step.stepId);
    of[l.step.stepId] = [...(of[l.step.stepId] ?? []), l.line];
  }
  return { order, of };
}

describe('@plinth/sdk run helpers against a real Plinth', () => {
  let t: EngineTestApp;
  let baseUrl: string;
  let plinth: Plinth;
  /** The API app answering on baseUrl: t.app, or the one started in its place by a restart. */
  let api: App;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
    api = t.app;
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    plinth = createPlinth({ baseUrl, token: t.adminToken });
  });
  after(async () => {
    if (api !== t.app) await api.close();
    await t.close();
  });

  it('start, followLogs to the approval, approve, then wait: every line once, step after step, each with its step', async () => {
    const stack = await createStack(t, [
      counting('build', 'b', 3),
      counting('lint', 'l', 2),
      { id: 'gate', type: 'approval', needs: ['build', 'lint'] },
      counting('deploy', 'd', 2, 0, ['gate']),
    ]);
    const run = await plinth.runs.start(stack.id, { description: 'from the SDK' });
    assert.equal(run.description, 'from the SDK');

    const first: RunLogLine[] = [];
    const follow = plinth.runs.followLogs(run.id, { intervalMs: 100 });
    let next = await follow.next();
    for (; !next.done; next = await follow.next()) first.push(next.value);
    assert.equal(next.value.status, 'WAITING_FOR_APPROVAL', 'following stops when a person must act');
    const { order, of } = byStep(first);
    assert.deepEqual([...order].sort(), ['build', 'lint'], 'each step once, its lines together');
    assert.deepEqual(of, { build: ['b-1', 'b-2', 'b-3'], lint: ['l-1', 'l-2'] });
    for (const line of first) assert.equal(line.step.pipelineRunId, run.id);

    const approved = await plinth.runs.approve(run.id);
    assert.equal(approved.stepId, 'gate');
    const rest: string[] = [];
    for await (const line of plinth.runs.followLogs(run.id, { skipExecutions: first.map((l) => l.step.id), intervalMs: 100 }))
      rest.push(`${line.step.stepId}:${line.line}`);
    assert.deepEqual(rest, ['deploy:d-1', 'deploy:d-2']);
    assert.equal((await plinth.runs.wait(run.id, { intervalMs: 100 })).status, 'SUCCEEDED');
  });

  it('approve and reject need exactly one waiting step, or the one named: else a 409 with an Sdk:Approval code', async () => {
    const stack = await createStack(t, [
      { id: 'left', type: 'approval' },
      { id: 'right', type: 'approval' },
    ]);
    const run = await plinth.runs.start(stack.id);
    await waitForStep(t, run.id, 'right', 'WAITING_FOR_APPROVAL');
    await waitForStep(t, run.id, 'left', 'WAITING_FOR_APPROVAL');

    const several = await plinth.runs.approve(run.id).catch((e: unknown) => e);
    assert.ok(several instanceof PlinthApiError);
    assert.equal(several.status, 409);
    assert.equal(several.code, 'Sdk:Approval:SEVERAL_WAITING');
    assert.match(several.message, /^Steps ("left", "right"|"right", "left") of run \S+ are waiting for approval: name one with stepId/);

    assert.equal((await plinth.runs.approve(run.id, { stepId: 'left' })).stepId, 'left');
    const again = await plinth.runs.approve(run.id, { stepId: 'left' }).catch((e: unknown) => e);
    assert.ok(again instanceof PlinthApiError && again.code === 'Sdk:Approval:NONE_WAITING', String(again));
    assert.match(again.message, /Step "left" .* not waiting for approval \(SUCCEEDED\)/);

    assert.equal((await plinth.runs.reject(run.id)).stepId, 'right');
    assert.equal((await plinth.runs.wait(run.id, { intervalMs: 100 })).status, 'FAILED');
    const none = await plinth.runs.reject(run.id).catch((e: unknown) => e);
    assert.ok(none instanceof PlinthApiError && none.code === 'Sdk:Approval:NONE_WAITING');
  });

  it('runs.start takes the action, inputs and autoApprove', async () => {
    const stack = await createStack(t, [
      { id: 'gate', type: 'approval' },
      { id: 'show', command: 'echo "$PLINTH_INPUTS"', needs: ['gate'] },
    ]);
    const run = await plinth.runs.start(stack.id, { inputs: { region: 'eu' }, autoApprove: true });
    const lines: string[] = [];
    for await (const line of plinth.runs.followLogs(run.id, { intervalMs: 100 })) lines.push(line.line);
    assert.deepEqual(lines, ['{"region":"eu"}']);
    assert.equal((await plinth.runs.get(run.id)).status, 'SUCCEEDED');
    const unknown = await plinth.runs.start('no-such-stack').catch((e: unknown) => e);
    assert.ok(unknown instanceof PlinthApiError && unknown.code === 'Api:Stack:NOT_FOUND');
  });

  it('followLogs gives up with the last error once reconnectForMs is spent without an answer', async () => {
    const stack = await createStack(t, [counting('slow', 's', 1, 0)]);
    const run = await plinth.runs.start(stack.id);
    const nowhere = createPlinth({ baseUrl: 'http://127.0.0.1:9', token: t.adminToken, retry: { attempts: 1 } });
    const events: ReconnectEvent[] = [];
    const started = Date.now();
    const error = await (async () => {
      for await (const _ of nowhere.runs.followLogs(run.id, { reconnectForMs: 1500, onReconnect: (e) => events.push(e) }));
    })().catch((e: unknown) => e);
    assert.ok(error instanceof Error && !(error instanceof PlinthApiError), String(error));
    assert.ok(events.length >= 2);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 1500, `gave up after ${elapsed} ms, before the window was spent`);
    assert.ok(elapsed < 10_000);
  });
  // Last: after it, t.call (which injects into the closed first app) no longer answers.
  it('followLogs rides out a restart of the API: it reconnects, says so, and loses or repeats no line', async () => {
    const stack = await createStack(t, [counting('count', 'line', 30, 0.2), counting('after', 'after', 2, 0, ['count'])]);
    const run = await plinth.runs.start(stack.id);
    const events: ReconnectEvent[] = [];
    let reconnected = 0;
    const seen: RunLogLine[] = [];
    let restart: Promise<void> | undefined;
    const follow = plinth.runs.followLogs(run.id, { intervalMs: 100, onReconnect: (e) => events.push(e), onReconnected: () => reconnected++ });
    let next = await follow.next();
    for (; !next.done; next = await follow.next()) {
      seen.push(next.value);
      if (seen.length === 5) restart = restartApi(4000);
    }
    await restart;
    assert.equal(next.value.status, 'SUCCEEDED');
    assert.ok(events.length >= 1, 'onReconnect told the caller');
    assert.ok(events.every((e) => e.downForMs < 60_000 && e.delayMs > 0));
    assert.ok(reconnected >= 1, 'onReconnected told the caller the API answers again');
    assert.deepEqual(
      seen.map((l) => `${l.step.stepId}:${l.line}`),
      [...Array.from({ length: 30 }, (_, i) => `count:line-${i + 1}`), 'after:after-1', 'after:after-2'],
    );
  });

  /** Closes the API (its log streams end), leaves the port unanswered for `downMs`, then serves it again. */
  async function restartApi(downMs: number): Promise<void> {
    const port = Number(new URL(baseUrl).port);
    await api.close();
    await new Promise((resolve) => setTimeout(resolve, downMs));
    const config = { ...loadConfig({ PLINTH_STEP_EGRESS_ALLOW: '127.0.0.1,::1' }), databaseUrl: t.database.url, adminToken: t.adminToken };
    api = await buildApp({ db: t.db, config, routes: ROUTES, secrets: TEST_SECRETS });
    await api.listen({ host: '127.0.0.1', port });
  }
});
