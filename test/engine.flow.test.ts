import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createStack, getRun, logLines, startEngineTestApp, stepsOf, triggerRun, waitForRunStatus, waitForStep, type EngineTestApp } from './helpers/engine.ts';

describe('a stack run through the API', () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
  });
  after(() => t.close());

  it('goes QUEUED → RUNNING → WAITING_FOR_APPROVAL → SUCCEEDED with plan, approval and apply steps', async () => {
    const stack = await createStack(t, [
      { id: 'plan', command: 'echo planning; sleep 0.3' },
      { id: 'approve', type: 'approval', needs: ['plan'] },
      { id: 'apply', command: 'echo applying', needs: ['approve'] },
    ]);
    const queued = await triggerRun(t, stack.id, { description: 'first change' });
    assert.equal(queued.status, 'QUEUED');
    assert.equal(queued.isCancellable, true);
    assert.equal(queued.attachedEntityId, stack.id);
    assert.equal(queued.queueConditionKey, `stack:${stack.id}`);
    assert.equal(queued.engineWorkflowId, `plinth-run-${queued.id}`);
    assert.equal(queued.variantName, 'apply');
    assert.equal(queued.description, 'first change');

    await waitForRunStatus(t, queued.id, 'RUNNING');
    const waiting = await waitForRunStatus(t, queued.id, 'WAITING_FOR_APPROVAL');
    assert.equal(waiting.queueReason, 'WAITING_FOR_APPROVAL');
    const approval = await waitForStep(t, queued.id, 'approve', 'WAITING_FOR_APPROVAL');
    assert.equal(
      (await stepsOf(t, queued.id)).some((s) => s.stepId === 'apply'),
      false,
      'apply must not start before the approval',
    );

    const approved = await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`);
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.data.status, 'SUCCEEDED');

    const done = await waitForRunStatus(t, queued.id, 'SUCCEEDED');
    assert.equal(done.isCancellable, false);
    assert.ok(done.completedAt && done.startedAt);
    const steps = await stepsOf(t, queued.id);
    assert.deepEqual(
      steps.map((s) => [s.stepId, s.status]),
      [
        ['plan', 'SUCCEEDED'],
        ['approve', 'SUCCEEDED'],
        ['apply', 'SUCCEEDED'],
      ],
    );
    const plan = steps[0];
    assert.match(plan.engineRunId, /^\d+$/, 'a dispatched step carries its job id');
    assert.equal(plan.logs.logStreamPrefix, `/pipeline-step-executions/${plan.id}/logs`);
    assert.deepEqual(Object.keys(plan.logs).sort(), ['cloudAccountId', 'logGroupName', 'logStreamPrefix', 'region']);
    const logs = await t.call('GET', `/pipeline-step-executions/${plan.id}/logs`);
    assert.deepEqual(
      logs.body.data.map((l: any) => [l.seq, l.stream, l.line]),
      [[1, 'stdout', 'planning']],
    );
    assert.equal(logs.body.meta.complete, true);
    const stackNow = await t.call('GET', `/stacks/${stack.id}`);
    assert.equal(stackNow.body.data.latestRunId, queued.id);
    const history = (await t.call('GET', `/pipeline-runs/${queued.id}/transitions?limit=200`)).body.data;
    const runHistory = history.filter((h: any) => !h.stepExecutionId).map((h: any) => h.toStatus);
    assert.deepEqual(runHistory, ['QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL', 'RUNNING', 'SUCCEEDED']);
    const approvalHistory = history.filter((h: any) => h.stepExecutionId === approval.id);
    assert.deepEqual(
      approvalHistory.map((h: any) => [h.fromStatus ?? null, h.toStatus, h.reason]),
      [
        [null, 'WAITING_FOR_APPROVAL', 'its needs succeeded'],
        ['WAITING_FOR_APPROVAL', 'SUCCEEDED', 'approved'],
      ],
    );
  });

  it('runs independent steps in parallel and a step only after everything it needs', async () => {
    const mark = (name: string) => `echo "${name} start $(date +%s%N)"; sleep 1; echo "${name} end $(date +%s%N)"`;
    const stack = await createStack(t, [
      { id: 'a', command: mark('a') },
      { id: 'b', command: mark('b') },
      { id: 'c', command: mark('c'), needs: ['a', 'b'] },
    ]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const lines = (await Promise.all((await stepsOf(t, run.id)).map((s) => logLines(t, s.id)))).flat();
    const events = Object.fromEntries(
      lines.map((l) => {
        const [name, what, ns] = l.split(' ');
        return [`${name} ${what}`, BigInt(ns)];
      }),
    );
    assert.ok(events['a start'] < events['b end'] && events['b start'] < events['a end'], 'a and b overlap');
    assert.ok(events['c start'] > events['a end'] && events['c start'] > events['b end'], 'c starts after a and b end');
  });

  it('autoapprove passes approval steps without a human', async () => {
    const stack = await createStack(t, [
      { id: 'approve', type: 'approval' },
      { id: 'apply', needs: ['approve'] },
    ]);
    const run = await triggerRun(t, stack.id, { autoapprove: true });
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const approval = (await stepsOf(t, run.id)).find((s) => s.stepId === 'approve');
    assert.equal(approval.statusDetail.approvedBy, 'autoapprove');
  });

  it('a plan run stops before the approval and skips what follows it', async () => {
    const stack = await createStack(t, [{ id: 'plan' }, { id: 'approve', type: 'approval', needs: ['plan'] }, { id: 'apply', needs: ['approve'] }]);
    const run = await triggerRun(t, stack.id, { action: 'plan' });
    assert.equal(run.variantName, 'plan');
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const steps = await stepsOf(t, run.id);
    assert.deepEqual(Object.fromEntries(steps.map((s) => [s.stepId, s.status])), { plan: 'SUCCEEDED', approve: 'SKIPPED', apply: 'SKIPPED' });
  });

  it("a run uses the latest version of the stack's change pipeline, set through POST /pipeline-versions", async () => {
    const stack = await createStack(t, [{ id: 'old', command: 'echo old' }]);
    const version = await t.call('POST', '/pipeline-versions', {
      body: { data: { pipelineId: stack.changePipelineId, config: { steps: [{ id: 'new', name: 'New', type: 'script', with: { command: 'echo new' } }] } } },
    });
    assert.equal(version.status, 201, JSON.stringify(version.body));
    const run = await triggerRun(t, stack.id);
    assert.equal(run.pipelineVersionId, version.body.data.id);
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    assert.deepEqual(
      (await stepsOf(t, run.id)).map((s) => s.stepId),
      ['new'],
    );
  });

  it("a destroy run runs the stack's destroy pipeline", async () => {
    const stack = await createStack(t, [{ id: 'change' }]);
    const destroy = (await t.call('GET', `/stacks/${stack.id}`)).body.data.destroyPipelineId;
    await t.call('POST', '/pipeline-versions', {
      body: { data: { pipelineId: destroy, config: { steps: [{ id: 'teardown', name: 'Teardown', type: 'script', with: { command: 'echo bye' } }] } } },
    });
    const run = await triggerRun(t, stack.id, { action: 'destroy', inputs: { reason: 'decommission' } });
    assert.equal(run.pipelineId, destroy);
    assert.equal(run.variantName, 'destroy');
    assert.deepEqual(run.input, { reason: 'decommission' });
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
  });

  it('an opentofu step on a worker without OpenTofu fails with a typed error instead of pretending to succeed', async () => {
    const stack = await createStack(t, [{ id: 'plan', type: 'opentofu.plan' }]);
    const run = await triggerRun(t, stack.id);
    const failed = await waitForRunStatus(t, run.id, 'FAILED');
    assert.equal(failed.error.code, 'Engine:Run:STEP_FAILED');
    const [step] = await stepsOf(t, run.id);
    // PLINTH_TOFU_BIN defaults to `tofu` on PATH, which this machine does not have (docs/opentofu.md).
    assert.equal(step.error.code, 'OpenTofu:Command:FAILED');
    assert.equal(step.error.metadata?.exitCode ?? 127, 127);
    assert.equal((await getRun(t, run.id)).isCancellable, false);
  });
});
