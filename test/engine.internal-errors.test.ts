import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSandbox } from '../src/engine/sandbox/index.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import { serviceAccountCaller } from './helpers/callers.ts';
import { createStack, getRun, startEngineTestApp, triggerRun, waitFor, waitForStep, type EngineTestApp } from './helpers/engine.ts';

/** What a worker's own failure might say: a path of the host and a socket no tenant should learn of. */
const INTERNAL = 'EACCES: open /var/lib/plinth/secrets/master.key via /run/plinth-spawner.sock';

describe("a worker's internal failure", () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    const sandbox = createSandbox(loadSandboxSettings({ PLINTH_SANDBOX: 'off' }, undefined));
    // A sandbox that fails as no step's code or input could make it: the worker's own fault.
    sandbox.open = async () => {
      throw new Error(INTERNAL);
    };
    await t.startWorker({ sandbox });
  });
  after(() => t.close());

  it("fails the step with Engine:Worker:ERROR and keeps the platform's error text from the run's readers", async () => {
    const stack = await createStack(t, [{ id: 'out', command: 'echo hello' }]);
    const run = await triggerRun(t, stack.id);
    await waitFor(`run ${run.id} to fail`, async () => ((await getRun(t, run.id)).status === 'FAILED' ? true : undefined));
    const step = await waitForStep(t, run.id, 'out', 'FAILED');
    assert.equal(step.error.code, 'Engine:Worker:ERROR');
    assert.match(step.error.message, /its log has the cause/);
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    for (const url of [`/pipeline-runs/${run.id}`, `/pipeline-runs/${run.id}/step-executions`, `/pipeline-step-executions/${step.id}`]) {
      const res = await t.call('GET', url, { token: viewer.token });
      assert.equal(res.status, 200, `${url}: ${JSON.stringify(res.body)}`);
      assert.doesNotMatch(JSON.stringify(res.body), /master\.key|spawner\.sock|EACCES/, url);
    }
  });
});
