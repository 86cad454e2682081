import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import {
  createStack,
  isAlive,
  spawnWorkerProcess,
  startEngineTestApp,
  stepsOf,
  tempDir,
  triggerRun,
  waitFor,
  waitForRunStatus,
  waitForStep,
  type EngineTestApp,
} from './helpers/engine.ts';

function killGroupQuietly(pid: number) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

describe('workers that die, drain and share a queue', () => {
  let t: EngineTestApp;
  before(async () => (t = await startEngineTestApp()));
  after(() => t.close());

  it('a worker killed with SIGKILL mid-step is detected by its lease, and its attempt fails over to a retry that ends the run', async () => {
    const dir = tempDir();
    const stack = await createStack(t, [
      {
        id: 'deploy',
        command: `if [ -f ${dir}/marker ]; then echo second attempt; exit 0; fi; touch ${dir}/marker; echo $$ > ${dir}/pid; sleep 30`,
        retry: { maxAttempts: 2 },
      },
    ]);
    const child = spawnWorkerProcess(t);
    try {
      const run = await triggerRun(t, stack.id);
      const running = await waitForStep(t, run.id, 'deploy', 'RUNNING', 30_000);
      assert.match(running.queueMetadata.workerId, new RegExp(`-${child.pid}-`));
      await waitFor('the script to start', async () => (existsSync(path.join(dir, 'pid')) ? true : undefined));
      const orphanPid = Number(readFileSync(path.join(dir, 'pid'), 'utf8'));
      child.kill('SIGKILL');
      await once(child, 'exit');
      const killedAt = Date.now();
      await waitFor('the dead worker\'s script to be killed by its guard', async () => (isAlive(orphanPid) ? undefined : true));
      await t.startWorker();

      const done = await waitForRunStatus(t, run.id, 'SUCCEEDED', 20_000);
      assert.ok(Date.now() - killedAt < 10_000, 'failed over within lease + reap time');
      const attempts = await stepsOf(t, run.id);
      assert.deepEqual(attempts.map((s) => [s.retryAttempt, s.status]), [[0, 'FAILED'], [1, 'SUCCEEDED']]);
      assert.equal(attempts[0].error.code, 'Engine:Worker:LOST');
      assert.equal(attempts[1].statusDetail.workerId, 'test-worker-1');
      assert.equal(done.attemptEpoch, 1);
    } finally {
      child.kill('SIGKILL');
      // Should the guard have failed, leave nothing running behind the test.
      if (existsSync(path.join(dir, 'pid'))) killGroupQuietly(Number(readFileSync(path.join(dir, 'pid'), 'utf8')));
    }
  });

  it('a worker stopped with SIGTERM hands its running step back, and another worker runs it', async () => {
    const dir = tempDir();
    const stack = await createStack(t, [{ id: 'long', command: `echo $$ >> ${dir}/pids; if [ -f ${dir}/seen ]; then exit 0; fi; touch ${dir}/seen; sleep 30` }]);
    const child = spawnWorkerProcess(t, { PLINTH_WORKER_CONCURRENCY: '2' });
    for (const w of t.workers) await w.stop();
    t.workers.length = 0;
    try {
      const run = await triggerRun(t, stack.id);
      await waitForStep(t, run.id, 'long', 'RUNNING', 30_000);
      await waitFor('the script to start', async () => (existsSync(path.join(dir, 'seen')) ? true : undefined));
      const firstPid = Number(readFileSync(path.join(dir, 'pids'), 'utf8').trim());
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      assert.equal(code, 0, 'the worker exits cleanly after draining');
      assert.equal(isAlive(firstPid), false, 'the drained step process is gone');
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
    const dir = tempDir();
    const record = `echo "$PLINTH_STEP_EXECUTION_ID" >> ${dir}/ran; sleep 0.05`;
    const stacks = await Promise.all(Array.from({ length: 12 }, () => createStack(t, [{ id: 'a', command: record }, { id: 'b', command: record }, { id: 'c', command: record, needs: ['a', 'b'] }])));
    const runs = await Promise.all(stacks.map((s) => triggerRun(t, s.id)));
    await Promise.all(runs.map((r) => waitForRunStatus(t, r.id, 'SUCCEEDED', 30_000)));

    const ran = readFileSync(path.join(dir, 'ran'), 'utf8').trim().split('\n');
    assert.equal(ran.length, 36);
    assert.equal(new Set(ran).size, 36, 'no step execution ran twice');
    const executions = (await Promise.all(runs.map((r) => stepsOf(t, r.id)))).flat();
    assert.equal(executions.length, 36);
    const byWorker = new Set(executions.map((e) => e.statusDetail.workerId));
    assert.deepEqual([...byWorker].sort(), [w1.workerId, w2.workerId].sort(), 'both workers took work');
  });
});
