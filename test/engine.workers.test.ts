import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import {
  createStack,
  FAST_ENGINE_ENV,
  isAlive,
  logLines,
  spawnWorkerProcess,
  startEngineTestApp,
  spawnerOf,
  stepProcessesOf,
  stepsOf,
  triggerRun,
  waitFor,
  waitForLine,
  waitForRunStatus,
  waitForStep,
  type EngineTestApp,
} from './helpers/engine.ts';

function killQuietly(pids: number[]) {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

describe('workers that die, drain and share a queue', () => {
  let t: EngineTestApp;
  before(async () => (t = await startEngineTestApp()));
  after(() => t.close());

  it('a worker killed with SIGKILL mid-step is detected by its lease, and its attempt fails over to a retry that ends the run', async () => {
    const stack = await createStack(t, [
      {
        id: 'deploy',
        // A daemon that left the step's session, and a plain child: neither may outlive the worker.
        command: 'if [ "$PLINTH_RETRY_ATTEMPT" = 1 ]; then echo second attempt; exit 0; fi; setsid sleep 60 & sleep 30 & echo started; wait',
        retry: { maxAttempts: 2 },
      },
    ]);
    const child = spawnWorkerProcess(t);
    let orphans: number[] = [];
    try {
      const run = await triggerRun(t, stack.id);
      const running = await waitForStep(t, run.id, 'deploy', 'RUNNING', 30_000);
      assert.match(running.queueMetadata.workerId, new RegExp(`-${child.pid}-`));
      await waitForLine(t, running.id, /^started$/);
      orphans = stepProcessesOf(child.pid!);
      assert.ok(orphans.length >= 4, `expected the sandbox, the shell and two sleeps, found ${orphans.length} processes`);
      const spawner = spawnerOf(child.pid!);
      assert.ok(spawner, 'the worker starts its sandboxes through a spawner');
      child.kill('SIGKILL');
      await once(child, 'exit');
      const killedAt = Date.now();
      await waitFor("the dead worker's spawner to exit", async () => (isAlive(spawner) ? undefined : true));
      await waitFor("the dead worker's step processes to be killed by its guard", async () => (orphans.some(isAlive) ? undefined : true));
      await t.startWorker();
      // The lease runs from the worker's last heartbeat; the new worker's reaper then looks every reap
      // interval. Measured from whichever came later, so a slow machine's worker start is not counted.
      const reaperFrom = Math.max(Date.now(), killedAt + Number(FAST_ENGINE_ENV.PLINTH_WORKER_LEASE_MS));
      await waitFor('the lost attempt to be failed', async () => ((await stepsOf(t, run.id))[0].status === 'FAILED' ? true : undefined), 20_000);
      const detectedIn = Date.now() - reaperFrom;
      const bound = Number(FAST_ENGINE_ENV.PLINTH_WORKER_REAP_MS) + 3_000;
      assert.ok(detectedIn < bound, `the reaper failed the lost attempt ${detectedIn} ms after its lease ran out (bound ${bound} ms)`);

      const done = await waitForRunStatus(t, run.id, 'SUCCEEDED', 30_000);
      const attempts = await stepsOf(t, run.id);
      assert.deepEqual(
        attempts.map((s) => [s.retryAttempt, s.status]),
        [
          [0, 'FAILED'],
          [1, 'SUCCEEDED'],
        ],
      );
      assert.equal(attempts[0].error.code, 'Engine:Worker:LOST');
      assert.equal(attempts[1].statusDetail.workerId, 'test-worker-1');
      assert.equal(done.attemptEpoch, 1);
    } finally {
      child.kill('SIGKILL');
      // Should the guard have failed, leave nothing running behind the test.
      killQuietly(orphans);
    }
  });

  it('a worker stopped with SIGTERM hands its running step back, and another worker runs it', async () => {
    // Long enough to be running when its first worker drains (within the kill grace), short enough for the second to finish.
    const stack = await createStack(t, [{ id: 'long', command: 'echo started; sleep 4' }]);
    const child = spawnWorkerProcess(t, { PLINTH_WORKER_CONCURRENCY: '2' });
    for (const w of t.workers) await w.stop();
    t.workers.length = 0;
    try {
      const run = await triggerRun(t, stack.id);
      const running = await waitForStep(t, run.id, 'long', 'RUNNING', 30_000);
      await waitForLine(t, running.id, /^started$/);
      const first = stepProcessesOf(child.pid!);
      assert.ok(first.length >= 2);
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      assert.equal(code, 0, 'the worker exits cleanly after draining');
      assert.deepEqual(first.filter(isAlive), [], 'the drained step processes are gone');
      const [step] = await stepsOf(t, run.id);
      assert.equal(step.status, 'QUEUED', 'handed back, not failed');
      assert.equal(step.retryAttempt, 0);

      await t.startWorker();
      await waitForRunStatus(t, run.id, 'SUCCEEDED');
      const logs = await t.call('GET', `/pipeline-step-executions/${step.id}/logs`);
      assert.ok(logs.body.data.some((l: any) => l.stream === 'system' && /shutting down/.test(l.line)));
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('two workers share one queue without running any step twice', async () => {
    for (const w of t.workers) await w.stop();
    t.workers.length = 0;
    const [w1, w2] = [await t.startWorker({ concurrency: 4 }), await t.startWorker({ concurrency: 4 })];
    const record = 'echo "ran $PLINTH_STEP_EXECUTION_ID"; sleep 0.05';
    const stacks = await Promise.all(
      Array.from({ length: 12 }, () =>
        createStack(t, [
          { id: 'a', command: record },
          { id: 'b', command: record },
          { id: 'c', command: record, needs: ['a', 'b'] },
        ]),
      ),
    );
    const runs = await Promise.all(stacks.map((s) => triggerRun(t, s.id)));
    // 36 sandboxed steps: each costs a fifth of a second of setup on a loaded 2-core machine.
    await Promise.all(runs.map((r) => waitForRunStatus(t, r.id, 'SUCCEEDED', 90_000)));

    const executions = (await Promise.all(runs.map((r) => stepsOf(t, r.id)))).flat();
    assert.equal(executions.length, 36);
    // A step that ran twice would have logged twice (its log goes on across attempts of one execution).
    const ran = (await Promise.all(executions.map((e) => logLines(t, e.id)))).flat().filter((l) => l.startsWith('ran '));
    assert.equal(ran.length, 36);
    assert.equal(new Set(ran).size, 36, 'no step execution ran twice');
    const byWorker = new Set(executions.map((e) => e.statusDetail.workerId));
    assert.deepEqual([...byWorker].sort(), [w1.workerId, w2.workerId].sort(), 'both workers took work');
  });
});
