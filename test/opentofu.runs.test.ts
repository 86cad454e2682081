import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { serviceAccountCaller } from './helpers/callers.ts';
import { logLines, stepsOf, triggerRun, waitFor, waitForLine, waitForRunStatus, waitForStep } from './helpers/engine.ts';
import { createTofuStack, stackCode, startTofuTestApp, startTofuWorker, type TofuTestApp } from './helpers/opentofu.ts';

const slowConfig = {
  resources: {
    'standin_server.a': { attributes: { name: 'a' }, apply_ms: 700 },
    'standin_server.b': { attributes: { name: 'b' }, apply_ms: 700 },
    'standin_server.c': { attributes: { name: 'c' }, apply_ms: 700 },
  },
  outputs: { servers: { value: 'a,b,c' } },
};

async function latestState(t: TofuTestApp, stackId: string) {
  const versions = (await t.call('GET', `/stacks/${stackId}/state-versions`)).body.data;
  if (versions.length === 0) return undefined;
  return (await t.call('GET', `/stacks/${stackId}/state-versions/${versions[versions.length - 1].id}`)).body.data;
}

describe('OpenTofu runs: the lock, saved plans, cancellation, autoapprove', () => {
  let t: TofuTestApp;
  const code = stackCode(slowConfig);

  before(async () => {
    t = await startTofuTestApp();
    // A long grace: a cancelled apply must have time to finish its resource, write state and unlock.
    await startTofuWorker(t, code, { stopGrace: { graceMs: 15_000, termGraceMs: 2_000 } });
  });
  after(() => t.close());

  it('autoapprove runs plan and apply without waiting', async () => {
    const stack = await createTofuStack(t);
    const run = await triggerRun(t, stack.id, { autoapprove: true });
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 30_000);
    assert.equal((await latestState(t, stack.id)).state.resources.length, 3);
  });

  it('a run whose plan meets a lock held by someone else fails, naming the holder, and leaves state and lock alone', async () => {
    const stack = await createTofuStack(t);
    const member = (await serviceAccountCaller(t, 'MEMBER')).token;
    const holder = {
      ID: randomUUID(),
      Operation: 'OperationTypeApply',
      Who: 'other@laptop',
      Version: '1.8.0',
      Created: new Date().toISOString(),
      Info: '',
      Path: '',
    };
    const lock = await fetch(`${t.baseUrl}/state-backend/${stack.serviceStateBackendWorkspace}/lock`, {
      method: 'LOCK',
      headers: { Authorization: `Bearer ${member}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(holder),
    });
    assert.equal(lock.status, 200);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'FAILED', 30_000);
    const plan = (await stepsOf(t, run.id)).find((s) => s.stepId === 'plan');
    assert.equal(plan.error.code, 'OpenTofu:Command:FAILED');
    assert.ok((await logLines(t, plan.id)).some((l) => l.includes(`already locked: ID=${holder.ID}`)));
    assert.equal((await t.call('GET', `/stacks/${stack.id}/state-lock`)).body.data.lock.id, holder.ID);
    assert.equal(await latestState(t, stack.id), undefined);
    await t.call('DELETE', `/stacks/${stack.id}/state-lock`);
  });

  it("apply refuses a saved plan that is another run's", async () => {
    const stack = await createTofuStack(t);
    const first = await triggerRun(t, stack.id, { action: 'plan' });
    await waitForRunStatus(t, first.id, 'SUCCEEDED', 30_000);
    const second = await triggerRun(t, stack.id);
    const approval = await waitForStep(t, second.id, 'approve', 'WAITING_FOR_APPROVAL', 30_000);
    // Someone swaps the first run's plan in for the second's (a database edit): it does not open as the second run's.
    const theirs = await t.db.selectFrom('stack_plans').select('sealed_plan').where('run_id', '=', first.id).executeTakeFirstOrThrow();
    await t.db.updateTable('stack_plans').set({ sealed_plan: theirs.sealed_plan }).where('run_id', '=', second.id).execute();
    await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`);
    await waitForRunStatus(t, second.id, 'FAILED', 30_000);
    const apply = (await stepsOf(t, second.id)).find((s) => s.stepId === 'apply');
    assert.equal(apply.error.code, 'OpenTofu:Plan:NOT_THIS_RUN');
    assert.equal(await latestState(t, stack.id), undefined, 'nothing was applied');
  });

  it("an ADMIN force-unlocking a run's lock is recorded in that run's history; the run's next write is refused", async () => {
    const stack = await createTofuStack(t);
    const run = await triggerRun(t, stack.id, { autoapprove: true });
    const apply = await waitForStep(t, run.id, 'apply', 'RUNNING', 30_000);
    await waitForLine(t, apply.id, /standin_server\.a: Creating/, 30_000);
    const held = (await t.call('GET', `/stacks/${stack.id}/state-lock`)).body.data.lock;
    assert.equal(held.runId, run.id);
    assert.equal((await t.call('DELETE', `/stacks/${stack.id}/state-lock`)).status, 204);
    const history = (await t.call('GET', `/pipeline-runs/${run.id}/transitions?limit=200`)).body.data;
    assert.ok(
      history.some((h: { reason: string }) => h.reason.startsWith(`state lock ${held.id} force-unlocked by`)),
      JSON.stringify(history),
    );
    await waitForRunStatus(t, run.id, 'FAILED', 30_000);
    assert.ok((await logLines(t, apply.id)).some((l) => /HTTP error: 409/.test(l)));
  });

  it('a cancelled apply is interrupted: OpenTofu writes what it applied and releases the lock', async () => {
    const stack = await createTofuStack(t);
    const run = await triggerRun(t, stack.id, { autoapprove: true });
    const apply = await waitForStep(t, run.id, 'apply', 'RUNNING', 30_000);
    await waitForLine(t, apply.id, /standin_server\.a: Creating/, 30_000);
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/cancel`)).status, 200);
    await waitForRunStatus(t, run.id, 'CANCELLED', 30_000);
    const saved = await waitFor('the interrupted apply to write its state', () => latestState(t, stack.id), 30_000);
    const lock = await waitFor(
      'the lock to be released',
      async () => {
        const status = (await t.call('GET', `/stacks/${stack.id}/state-lock`)).body.data;
        return status.locked ? undefined : status;
      },
      30_000,
    );
    assert.equal(lock.locked, false);
    const created = saved.state.resources.map((r: { name: string }) => r.name);
    assert.ok(created.length >= 1 && created.length < 3, `applied part of the plan: ${created}`);
    assert.equal(saved.runId, run.id);
    await waitForLine(t, apply.id, /Interrupt received/, 10_000);
    // The next run starts from the state the interrupted one left.
    const next = await triggerRun(t, stack.id, { autoapprove: true });
    await waitForRunStatus(t, next.id, 'SUCCEEDED', 30_000);
    assert.equal((await latestState(t, stack.id)).state.resources.length, 3);
  });

  it("the stack's next run waits for the lock a cancelled apply still holds, and plans from the state it wrote", async () => {
    // The resource in hand at the cancel takes 2.5 s more: the next run reaches its plan well before.
    code.write({ ...slowConfig, resources: { ...slowConfig.resources, 'standin_server.a': { attributes: { name: 'a' }, apply_ms: 2500 } } });
    try {
      const stack = await createTofuStack(t);
      const run = await triggerRun(t, stack.id, { autoapprove: true });
      const apply = await waitForStep(t, run.id, 'apply', 'RUNNING', 30_000);
      await waitForLine(t, apply.id, /standin_server\.a: Creating/, 30_000);
      assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/cancel`)).status, 200);
      const next = await triggerRun(t, stack.id, { autoapprove: true });
      const plan = await waitForStep(t, next.id, 'plan', 'RUNNING', 30_000);
      assert.equal((await t.call('GET', `/stacks/${stack.id}/state-lock`)).body.data.lock?.runId, run.id, 'the cancelled apply still holds the lock');
      const done = await waitFor(
        'the next run to finish',
        async () => {
          const { status } = (await t.call('GET', `/pipeline-runs/${next.id}`)).body.data;
          return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(status) ? status : undefined;
        },
        30_000,
      );
      assert.equal(done, 'SUCCEEDED', (await logLines(t, plan.id)).join('\n'));
      const planned = (await stepsOf(t, next.id)).find((s) => s.stepId === 'plan');
      // The cancelled apply created `a` before it let go: the next plan adds only the other two.
      assert.equal(planned.outputData.add, 2);
      assert.equal((await latestState(t, stack.id)).state.resources.length, 3);
    } finally {
      code.write(slowConfig);
    }
  });
});
