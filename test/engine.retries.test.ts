import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createStack, startEngineTestApp, stepsOf, triggerRun, waitForRunStatus, type EngineTestApp } from './helpers/engine.ts';

describe('retries and timeouts', () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
  });
  after(() => t.close());

  it('a failed attempt is retried as a new step execution until the policy allows no more', async () => {
    const stack = await createStack(t, [{ id: 'flaky', command: 'echo "attempt $PLINTH_RETRY_ATTEMPT"; exit 3', retry: { maxAttempts: 3 } }]);
    const run = await triggerRun(t, stack.id);
    const failed = await waitForRunStatus(t, run.id, 'FAILED');
    assert.equal(failed.error.code, 'Engine:Run:STEP_FAILED');
    const attempts = await stepsOf(t, run.id);
    assert.deepEqual(
      attempts.map((s) => [s.retryAttempt, s.isLastRetry, s.status]),
      [
        [0, false, 'FAILED'],
        [1, false, 'FAILED'],
        [2, true, 'FAILED'],
      ],
    );
    assert.equal(attempts[0].error.code, 'Engine:Script:FAILED');
    assert.equal(attempts[0].error.metadata.exitCode, 3);
    assert.notEqual(attempts[0].id, attempts[1].id);
  });

  it('a retry that succeeds lets the run go on', async () => {
    const stack = await createStack(t, [
      { id: 'flaky', command: 'test "$PLINTH_RETRY_ATTEMPT" = 1', retry: { maxAttempts: 2 } },
      { id: 'next', needs: ['flaky'] },
    ]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const steps = await stepsOf(t, run.id);
    assert.deepEqual(
      steps.map((s) => [s.stepId, s.retryAttempt, s.status]),
      [
        ['flaky', 0, 'FAILED'],
        ['flaky', 1, 'SUCCEEDED'],
        ['next', 0, 'SUCCEEDED'],
      ],
    );
  });

  it('a step running past timeoutSeconds is killed and fails with TIMED_OUT', async () => {
    const stack = await createStack(t, [{ id: 'slow', command: 'echo going; sleep 20', timeoutSeconds: 1 }]);
    const started = Date.now();
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'FAILED');
    assert.ok(Date.now() - started < 8_000, 'the step did not run its 20 s');
    const [step] = await stepsOf(t, run.id);
    assert.equal(step.error.code, 'Engine:Step:TIMED_OUT');
    assert.equal(step.error.message, 'The step ran longer than its timeoutSeconds (1)');
  });

  it('retrying a failed run starts every step afresh as the next attempt epoch; a running one cannot be retried', async () => {
    // The third attempt epoch is the first to pass: as though someone fixed the world in between.
    const stack = await createStack(t, [{ id: 'first' }, { id: 'second', command: 'test "$PLINTH_ATTEMPT_EPOCH" -ge 3', needs: ['first'] }]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'FAILED');
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/retry`)).status, 200);
    const again = await waitForRunStatus(t, run.id, 'FAILED');
    assert.equal(again.attemptEpoch, 2);

    const retried = await t.call('POST', `/pipeline-runs/${run.id}/retry`);
    assert.equal(retried.body.data.attemptEpoch, 3);
    assert.equal(retried.body.data.isCancellable, true);
    const done = await waitForRunStatus(t, run.id, 'SUCCEEDED');
    assert.equal(done.engineRunId, `${run.id}.3`);
    const epoch3 = (await t.call('GET', `/pipeline-runs/${run.id}/step-executions?attemptEpoch=3`)).body.data;
    assert.deepEqual(
      epoch3.map((s: any) => [s.stepId, s.attemptEpoch, s.status]),
      [
        ['first', 3, 'SUCCEEDED'],
        ['second', 3, 'SUCCEEDED'],
      ],
    );
    assert.equal((await stepsOf(t, run.id)).length, 6);
    const conflict = await t.call('POST', `/pipeline-runs/${run.id}/retry`);
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.code, 'Api:PipelineRun:NOT_RETRYABLE');
  });
});

describe("the worker's default time limit", () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker({ defaultStepTimeoutSeconds: 2 });
  });
  after(() => t.close());

  it('stops a step that sets no timeoutSeconds at the default, and says which limit it met', async () => {
    const stack = await createStack(t, [{ id: 'forever', command: 'echo going; sleep 600' }]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'FAILED', 20_000);
    const [step] = await stepsOf(t, run.id);
    assert.equal(step.error.code, 'Engine:Step:TIMED_OUT');
    assert.match(step.error.message, /the default time limit of a step without timeoutSeconds \(2 seconds, PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS\)/);
  });

  it("lets a step's own timeoutSeconds run past the default", async () => {
    const stack = await createStack(t, [{ id: 'patient', command: 'sleep 4', timeoutSeconds: 60 }]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 20_000);
  });
});
