import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertHistoryConsistent, markedCommand, processStarts } from './helpers/faults.ts';
import { createStack, getRun, startEngineTestApp, stepsOf, tempDir, waitFor, type EngineTestApp } from './helpers/engine.ts';
import { PLINTH_BIN, startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

/**
 * The database goes away for 5 s (every connection dropped, new ones refused) while steps finish,
 * with `plinth api-server` and two `plinth worker`s as processes of their own: none exits, the outcomes
 * are committed when the database is back, and no step's process runs twice.
 */
describe('a 5 s database outage while steps finish', () => {
  let t: EngineTestApp;
  let proxy: TcpProxy;
  let api: PlinthProcess;
  const workers: ChildProcess[] = [];
  const exits: string[] = [];
  let env: Record<string, string>;

  before(async () => {
    t = await startEngineTestApp();
    const target = new URL(t.database.url);
    proxy = await startTcpProxy(Number(target.port), target.hostname);
    const proxied = new URL(t.database.url);
    proxied.port = String(proxy.port);
    env = {
      DATABASE_URL: proxied.toString(),
      PLINTH_ADMIN_TOKEN: t.adminToken,
      PLINTH_DATA_DIR: tempDir(),
      PLINTH_SANDBOX: 'off',
      // The lease outlives the outage: an outage shorter than the lease never fails a step over.
      PLINTH_WORKER_LEASE_MS: '12000',
      PLINTH_WORKER_HEARTBEAT_MS: '1000',
      PLINTH_WORKER_REAP_MS: '500',
      PLINTH_WORKER_REDISPATCH_MS: '4000',
      PLINTH_WORKER_POLL_MS: '500',
      PLINTH_WORKER_CONCURRENCY: '8',
    };
    api = await startPlinthProcess(env, { command: 'api-server', readyTimeoutMs: 90_000 });
    for (let i = 0; i < 2; i++) {
      const child = spawn(process.execPath, [PLINTH_BIN, 'worker'], {
        env: { ...process.env, ...env, LOG_LEVEL: process.env.ENGINE_TEST_LOG ?? 'error' },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      child.on('exit', (code, signal) => exits.push(`worker ${i + 1} exited (${code ?? signal})`));
      workers.push(child);
    }
    void api.exited.then(({ code, signal }) => exits.push(`api exited (${code ?? signal})`));
  });

  after(async () => {
    for (const w of workers) w.kill('SIGKILL');
    await api?.stop();
    await proxy?.close();
    await t.close();
  });

  it('no process exits, every run ends, and each step process started once', async () => {
    const dir = tempDir();
    const stacks = await Promise.all(
      Array.from({ length: 6 }, () =>
        createStack(t, [
          { id: 'a', command: markedCommand(dir, 'sleep 2') },
          { id: 'b', command: markedCommand(dir), needs: ['a'] },
        ]),
      ),
    );
    const post = async (path: string) => {
      const res = await fetch(`${api.baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' },
        body: '{"data":{}}',
      });
      return { status: res.status, body: (await res.json()) as { data: { id: string } } };
    };
    const runs: string[] = [];
    for (const s of stacks) {
      const res = await post(`/stacks/${s.id}/pipeline-run`);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      runs.push(res.body.data.id);
    }
    await waitFor('every first step to be running', async () => (processStarts(dir, 'a') === runs.length ? true : undefined), 90_000);

    // The steps (sleep 2) finish in the middle of the outage.
    await sleep(500);
    const outage = proxy.cut(5_000);
    await sleep(1_000);
    const during = await post(`/stacks/${stacks[0].id}/pipeline-run`).catch((error: Error) => ({ status: 0, body: error.message }));
    assert.ok(during.status >= 500, `the API answers an error while the database is away (${during.status})`);
    await outage;
    const back = Date.now();

    await waitFor(
      'every run to succeed',
      async () => ((await Promise.all(runs.map((id) => getRun(t, id)))).every((r) => r.status === 'SUCCEEDED') ? true : undefined),
      40_000,
      200,
    );
    assert.ok(Date.now() - back < 30_000, 'the runs finished within seconds of the database returning (margin for a loaded machine)');
    assert.deepEqual(exits, [], 'no process exited');
    const health = await fetch(`${api.baseUrl}/health`);
    assert.equal(health.status, 200);

    assert.equal(processStarts(dir, 'a'), runs.length, 'each first step started once');
    assert.equal(processStarts(dir, 'b'), runs.length, 'each second step started once');
    for (const id of runs) {
      await assertHistoryConsistent(t.db, id);
      const steps = await stepsOf(t, id);
      assert.deepEqual(
        steps.map((s) => [s.stepId, s.retryAttempt, s.status]),
        [
          ['a', 0, 'SUCCEEDED'],
          ['b', 0, 'SUCCEEDED'],
        ],
      );
    }
  });

  it('an api and a worker started while the database is away wait for it, then start', async () => {
    // The outage lasts until both processes met it, however long a loaded machine takes to start them.
    let apiOutput = '';
    let workerOutput = '';
    const outage = proxy.cutUntil(() => /retrying/.test(apiOutput) && /retrying/.test(workerOutput), 8_000, 60_000);
    const lateApi = startPlinthProcess(env, { command: 'api-server', readyTimeoutMs: 90_000, onOutput: (chunk) => (apiOutput += chunk) });
    const lateWorker = spawn(process.execPath, [PLINTH_BIN, 'worker'], {
      env: { ...process.env, ...env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    lateWorker.stdout!.on('data', (chunk) => (workerOutput += chunk));
    let workerExit: number | string | null = null;
    lateWorker.on('exit', (code, signal) => (workerExit = code ?? signal));
    try {
      await outage;
      const api = await lateApi;
      try {
        assert.match(api.output(), /the database is not reachable; retrying/, 'the api met the outage while starting');
        assert.equal((await fetch(`${api.baseUrl}/health`)).status, 200);
      } finally {
        await api.stop();
      }
      await waitFor('the late worker to start', async () => (workerOutput.includes('plinth started') || workerExit !== null ? true : undefined), 60_000);
      assert.equal(workerExit, null, `the worker did not exit:\n${workerOutput}`);
      assert.match(workerOutput, /retrying/, 'the worker met the outage while starting');
    } finally {
      lateWorker.kill('SIGKILL');
    }
  });
});
