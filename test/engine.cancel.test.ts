import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createStack,
  getRun,
  isAlive,
  processTree,
  startEngineTestApp,
  stepsOf,
  triggerRun,
  waitFor,
  waitForLine,
  waitForRunStatus,
  waitForStep,
  type EngineTestApp,
} from './helpers/engine.ts';

describe('cancelling runs', () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
  });
  after(() => t.close());

  it('cancelling a running run kills its process and its children', async () => {
    const stack = await createStack(t, [
      { id: 'long', command: 'sleep 30 & echo started; wait' },
      { id: 'after', needs: ['long'] },
    ]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'long', 'RUNNING');
    await waitForLine(t, step.id, /^started$/);
    // The step's processes as the host sees them: its sandbox, the shell and the sleep it started.
    const pids = processTree(t.workers[0].spawnedPids.at(-1)!);
    assert.ok(pids.length >= 3, `expected the sandbox, the shell and its child, found ${pids.length} processes`);

    const res = await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.status, 'CANCELLED');
    assert.equal(res.body.data.isCancellable, false);
    assert.equal(res.body.data.error.code, 'Engine:Run:CANCELLED');
    await waitFor('the processes to be gone', async () => (pids.some(isAlive) ? undefined : true), 5_000);
    const steps = await stepsOf(t, run.id);
    assert.deepEqual(
      steps.map((s) => [s.stepId, s.status]),
      [['long', 'CANCELLED']],
    );
    // The worker does not overwrite the cancellation when the killed process exits.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await getRun(t, run.id)).status, 'CANCELLED');
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/cancel`)).status, 409);
  });

  it('cancelling a run waiting for its stack removes it from the queue; the stack goes on with the next', async () => {
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const first = await triggerRun(t, stack.id);
    const second = await triggerRun(t, stack.id);
    const third = await triggerRun(t, stack.id);
    const cancelled = await t.call('POST', `/pipeline-runs/${second.id}/cancel`);
    assert.equal(cancelled.body.data.status, 'CANCELLED');
    const gate = await waitForStep(t, first.id, 'approve', 'WAITING_FOR_APPROVAL');
    await t.call('POST', `/pipeline-step-executions/${gate.id}/approve`);
    await waitForRunStatus(t, first.id, 'SUCCEEDED');
    await waitForRunStatus(t, third.id, 'WAITING_FOR_APPROVAL');
    assert.deepEqual(await stepsOf(t, second.id), []);
    assert.equal((await getRun(t, second.id)).status, 'CANCELLED');
  });

  it('cancelling the active run admits the next waiting run', async () => {
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const first = await triggerRun(t, stack.id);
    const second = await triggerRun(t, stack.id);
    await t.call('POST', `/pipeline-runs/${first.id}/cancel`);
    await waitForRunStatus(t, second.id, 'WAITING_FOR_APPROVAL');
  });
});
