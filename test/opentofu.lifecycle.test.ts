import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPlinth } from '@plinth/sdk';
import { assertError, serviceAccountCaller } from './helpers/callers.ts';
import { logLines, stepsOf, triggerRun, waitForRunStatus, waitForStep } from './helpers/engine.ts';
import { createTofuStack, stackCode, startTofuTestApp, startTofuWorker, type StackCode, type TofuTestApp } from './helpers/opentofu.ts';

const SECRET = 'hunter2-very-secret-token';
/** Printed by the stand-in a line at a time (a heredoc) and JSON-escaped on one line (inside an object). */
const KEY = 'key-line-one "quoted"\nkey-line-two \\ backslashed\nkey-line-three';

const config = (size: number) => ({
  variables: { name: {}, password: { sensitive: true }, key: { sensitive: true } },
  resources: {
    'standin_network.main': { attributes: { name: '${var.name}', size } },
    'standin_login.admin': { attributes: { password: '${var.password}', key: '${var.key}', settings: { key: '${var.key}' } } },
  },
  outputs: { network_name: { value: '${var.name}' }, admin_password: { value: '${var.password}', sensitive: true } },
});

async function allLogs(t: TofuTestApp, runId: string): Promise<string> {
  const lines: string[] = [];
  for (const step of await stepsOf(t, runId)) lines.push(...(await logLines(t, step.id)));
  return lines.join('\n');
}

describe('an OpenTofu stack through the API: plan, approve, apply, outputs, a change, destroy', () => {
  let t: TofuTestApp;
  let code: StackCode;
  let stackId: string;
  const runs: string[] = [];

  before(async () => {
    t = await startTofuTestApp();
    code = stackCode(config(1));
    await startTofuWorker(t, code);
    stackId = (await createTofuStack(t, { name: 'core' })).id;
    for (const [name, value] of [
      ['password', SECRET],
      ['key', KEY],
    ]) {
      const set = await t.call('PUT', `/stacks/${stackId}/sensitive-variables/${name}`, { body: { data: { value } } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
    }
  });
  after(() => t.close());

  it('the first run plans, waits for approval, applies, and fills the stack output', async () => {
    const run = await triggerRun(t, stackId);
    runs.push(run.id);
    const approval = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL', 30_000);
    const plan = (await stepsOf(t, run.id)).find((s) => s.stepId === 'plan');
    assert.equal(plan.status, 'SUCCEEDED');
    assert.equal(plan.outputData.add, 2);
    assert.equal(plan.outputData.change, 0);
    assert.equal(plan.outputData.destroy, 0);
    assert.deepEqual([...plan.outputData.changedAddresses].sort(), ['standin_login.admin', 'standin_network.main']);
    const login = plan.outputData.resourceChanges.find((c: { address: string }) => c.address === 'standin_login.admin');
    assert.deepEqual(login, {
      address: 'standin_login.admin',
      action: 'create',
      attributes: [
        { name: 'id', after: '(known after apply)' },
        { name: 'key', after: '(sensitive)' },
        { name: 'password', after: '(sensitive)' },
        { name: 'settings', after: '(sensitive)' },
      ],
    });
    assert.ok(!JSON.stringify(plan.outputData).includes(SECRET), 'no sensitive value in the stored plan');
    // A plan shows the stack's values: a VIEWER (no state:read) reads what changes, not to what, nor the plan's log.
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    const seen = (await t.call('GET', `/pipeline-step-executions/${plan.id}`, { token: viewer.token })).body.data;
    assert.equal(seen.outputData.attributesWithheld, true);
    assert.deepEqual(
      seen.outputData.resourceChanges.find((c: { address: string }) => c.address === 'standin_login.admin'),
      { address: 'standin_login.admin', action: 'create' },
    );
    assert.equal(seen.outputData.add, 2);
    const listed = (await t.call('GET', `/pipeline-runs/${run.id}/step-executions`, { token: viewer.token })).body.data;
    assert.ok(!JSON.stringify(listed).includes('"attributes"'), 'the list withholds them too');
    assertError(await t.call('GET', `/pipeline-step-executions/${plan.id}/logs`, { token: viewer.token }), 403, 'Auth:Permission:DENIED');
    assertError(await t.call('GET', `/pipeline-step-executions/${plan.id}/logs?follow=true`, { token: viewer.token }), 403, 'Auth:Permission:DENIED');
    // The SDK's follow of the whole run skips the log a VIEWER may not read, and still ends.
    const follow = createPlinth({ baseUrl: t.baseUrl, token: viewer.token }).runs.followLogs(run.id, { intervalMs: 100 });
    let next = await follow.next();
    const followed: string[] = [];
    for (; !next.done; next = await follow.next()) followed.push(next.value.line);
    assert.deepEqual(followed, []);
    assert.equal(next.value.status, 'WAITING_FOR_APPROVAL');
    const member = await serviceAccountCaller(t, 'MEMBER');
    assert.equal((await t.call('GET', `/pipeline-step-executions/${plan.id}/logs`, { token: member.token })).status, 200);
    assert.ok((await t.call('GET', `/pipeline-step-executions/${plan.id}`, { token: member.token })).body.data.outputData.resourceChanges[0].attributes);
    assert.equal((await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`)).status, 200);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 30_000);
    const stack = (await t.call('GET', `/stacks/${stackId}`)).body.data;
    assert.deepEqual(stack.output, { network_name: 'core', admin_password: '(sensitive value)' });
    assert.equal(stack.latestRunId, run.id);
    assert.ok(stack.firstAppliedAt);
    const versions = (await t.call('GET', `/stacks/${stackId}/state-versions`)).body.data;
    assert.equal(versions.length, 1);
    assert.equal(versions[0].runId, run.id);
    assert.equal(versions[0].principalId, `run:${run.id}`);
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-lock`)).body.data.locked, false);
    const deleted = await t.call('DELETE', `/stacks/${stackId}`);
    assert.equal(deleted.status, 409, 'a stack whose state holds resources is not deleted');
    assert.equal(deleted.body.code, 'Api:Stack:IN_USE');
  });

  it('a plan with no changes lets the run finish without waiting for approval', async () => {
    const run = await triggerRun(t, stackId);
    runs.push(run.id);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 30_000);
    const steps = await stepsOf(t, run.id);
    assert.equal(steps.find((s) => s.stepId === 'plan').outputData.hasChanges, false);
    assert.equal(steps.find((s) => s.stepId === 'approve').status, 'SUCCEEDED');
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-versions`)).body.data.length, 1);
  });

  it('a second change updates in place, keeps firstAppliedAt, and adds a state version', async () => {
    const first = (await t.call('GET', `/stacks/${stackId}`)).body.data.firstAppliedAt;
    code.write(config(2));
    const run = await triggerRun(t, stackId, { inputs: { name: 'edge' } });
    runs.push(run.id);
    const approval = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL', 30_000);
    const plan = (await stepsOf(t, run.id)).find((s) => s.stepId === 'plan');
    assert.deepEqual([plan.outputData.add, plan.outputData.change, plan.outputData.destroy], [0, 1, 0]);
    await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 30_000);
    const stack = (await t.call('GET', `/stacks/${stackId}`)).body.data;
    assert.equal(stack.output.network_name, 'edge', 'a run input overrides the stack variable');
    assert.equal(stack.firstAppliedAt, first);
    const versions = (await t.call('GET', `/stacks/${stackId}/state-versions`)).body.data;
    assert.deepEqual(
      versions.map((v: { serial: number }) => v.serial),
      [1, 2],
    );
    assert.equal(versions[0].lineage, versions[1].lineage);
  });

  it('the destroy pipeline plans a destroy, waits for approval, destroys, and empties the output', async () => {
    const run = await triggerRun(t, stackId, { action: 'destroy' });
    runs.push(run.id);
    const approval = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL', 30_000);
    const plan = (await stepsOf(t, run.id)).find((s) => s.stepId === 'plan');
    assert.equal(plan.outputData.destroy, 2);
    assert.equal(plan.outputData.isDestroy, true);
    await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 30_000);
    assert.deepEqual((await t.call('GET', `/stacks/${stackId}`)).body.data.output, {});
    const versions = (await t.call('GET', `/stacks/${stackId}/state-versions`)).body.data;
    assert.equal(versions.length, 3);
    const latest = (await t.call('GET', `/stacks/${stackId}/state-versions/${versions[2].id}`)).body.data;
    assert.deepEqual(latest.state.resources, []);
  });

  it('a sensitive variable appears in no log line, response or step output', async () => {
    let masked = false;
    let keyMasked = false;
    for (const runId of runs) {
      const logs = await allLogs(t, runId);
      masked ||= logs.includes('password = "***"');
      keyMasked ||= logs.includes('key = <<-EOT\n            ***\n            ***\n            ***\n') && logs.includes('settings = {"key":"***"}');
      assert.ok(!logs.includes(SECRET), `run ${runId} logged the secret`);
      for (const line of KEY.split('\n')) assert.ok(!logs.includes(line), `run ${runId} logged a line of the key: ${line}`);
      assert.ok(!logs.includes(JSON.stringify(KEY).slice(1, -1)), `run ${runId} logged the key JSON-escaped`);
      assert.ok(!JSON.stringify(await stepsOf(t, runId)).includes(SECRET));
      assert.ok(!JSON.stringify((await t.call('GET', `/pipeline-runs/${runId}`)).body).includes(SECRET));
    }
    assert.ok(masked, 'the stand-in prints the password in its plan: Plinth masks it');
    assert.ok(keyMasked, 'the stand-in prints the key line by line and JSON-escaped: Plinth masks both');
    const listed = await t.call('GET', `/stacks/${stackId}/sensitive-variables`);
    assert.deepEqual(listed.body.data.map((v: { name: string }) => v.name).sort(), ['key', 'password']);
    assert.ok(!JSON.stringify(listed.body).includes(SECRET));
    assert.ok(!JSON.stringify((await t.call('GET', `/stacks/${stackId}`)).body).includes(SECRET));
    const stored = await t.db.selectFrom('stack_sensitive_variables').select('sealed_value').execute();
    assert.ok(stored.every((r) => !r.sealed_value.includes(SECRET)));
  });

  it('once destroyed, the stack can be deleted', async () => {
    assert.equal((await t.call('DELETE', `/stacks/${stackId}`)).status, 204);
  });
});
