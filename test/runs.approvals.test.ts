import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { serviceAccountCaller } from './helpers/callers.ts';
import { createStack, startEngineTestApp, stepsOf, triggerRun, waitForRunStatus, waitForStep, type EngineTestApp } from './helpers/engine.ts';

describe('approvals', () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
  });
  after(() => t.close());

  const approvalStack = () =>
    createStack(t, [
      { id: 'approve', type: 'approval' },
      { id: 'apply', needs: ['approve'] },
    ]);

  it('of two concurrent approvals of one step exactly one wins, the other is 409', async () => {
    const stack = await approvalStack();
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const results = await Promise.all([1, 2, 3].map(() => t.call('POST', `/pipeline-step-executions/${step.id}/approve`)));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409]);
    const conflict = results.find((r) => r.status === 409)!;
    assert.equal(conflict.body.code, 'Api:StepExecution:NOT_WAITING_FOR_APPROVAL');
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    assert.equal((await stepsOf(t, run.id)).filter((s) => s.stepId === 'apply').length, 1, 'apply ran once');
  });

  it('a second approval of the same step is 409', async () => {
    const stack = await approvalStack();
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    assert.equal((await t.call('POST', `/pipeline-step-executions/${step.id}/approve`)).status, 200);
    assert.equal((await t.call('POST', `/pipeline-step-executions/${step.id}/approve`)).status, 409);
    assert.equal((await t.call('POST', `/pipeline-step-executions/${step.id}/reject`)).status, 409);
  });

  it('rejecting fails the step and the run, and nothing after it starts', async () => {
    const stack = await approvalStack();
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const rejected = await t.call('POST', `/pipeline-step-executions/${step.id}/reject`);
    assert.equal(rejected.status, 200);
    assert.equal(rejected.body.data.status, 'FAILED');
    assert.equal(rejected.body.data.error.code, 'Engine:Approval:REJECTED');
    const failed = await waitForRunStatus(t, run.id, 'FAILED');
    assert.equal(failed.error.code, 'Engine:Run:STEP_FAILED');
    const apply = (await stepsOf(t, run.id)).find((s) => s.stepId === 'apply');
    assert.equal(apply.status, 'SKIPPED');
  });

  it('approving a step that is not waiting for approval is 409, and a VIEWER may not approve', async () => {
    const stack = await createStack(t, [
      { id: 'only', command: 'true' },
      { id: 'approve', type: 'approval', needs: ['only'] },
    ]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const script = (await stepsOf(t, run.id)).find((s) => s.stepId === 'only');
    assert.equal((await t.call('POST', `/pipeline-step-executions/${script.id}/approve`)).status, 409);
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assert.equal((await t.call('POST', `/pipeline-step-executions/${step.id}/approve`, { token: viewer.token })).status, 403);
    const member = await serviceAccountCaller(t, 'MEMBER');
    assert.equal((await t.call('POST', `/pipeline-step-executions/${step.id}/approve`, { token: member.token })).status, 200);
  });

  it('an approval racing a cancel: exactly one order wins, and the run ends CANCELLED with nothing left running', async () => {
    for (let i = 0; i < 5; i++) {
      // The step after the gate lasts: should the approval win, the cancel still finds the run going (it stops the step).
      const stack = await createStack(t, [
        { id: 'approve', type: 'approval' },
        { id: 'apply', needs: ['approve'], command: 'sleep 30' },
      ]);
      const run = await triggerRun(t, stack.id);
      const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
      const [approve, cancel] = await Promise.all([
        t.call('POST', `/pipeline-step-executions/${step.id}/approve`),
        t.call('POST', `/pipeline-runs/${run.id}/cancel`),
      ]);
      assert.equal(cancel.status, 200);
      assert.ok([200, 409].includes(approve.status));
      const steps = await stepsOf(t, run.id);
      const gate = steps.find((s) => s.stepId === 'approve');
      if (approve.status === 200) assert.equal(gate.status, 'SUCCEEDED');
      else assert.equal(gate.status, 'CANCELLED');
      await new Promise((r) => setTimeout(r, 100));
      const final = await t.call('GET', `/pipeline-runs/${run.id}`);
      assert.equal(final.body.data.status, 'CANCELLED');
      assert.ok((await stepsOf(t, run.id)).every((s) => ['SUCCEEDED', 'CANCELLED'].includes(s.status)));
    }
  });

  it('a step execution of another organization is 404', async () => {
    const stack = await approvalStack();
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const org = await t.call('POST', '/organizations', { body: { data: { name: 'Elsewhere', billingEmail: 'b@example.com' } } });
    const headers = { 'x-organization-id': org.body.data.id };
    assert.equal((await t.call('GET', `/pipeline-step-executions/${step.id}`, { headers })).status, 404);
    assert.equal((await t.call('POST', `/pipeline-step-executions/${step.id}/approve`, { headers })).status, 404);
    assert.equal((await t.call('GET', `/pipeline-runs/${run.id}`, { headers })).status, 404);
  });
});
