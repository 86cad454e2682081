import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import {
  FAST_ENGINE_ENV,
  getRun,
  LOOPBACK_GIT_ENV,
  logLines,
  stepsOf,
  triggerRun,
  waitFor,
  waitForLine,
  waitForRunStatus,
  waitForStep,
} from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { STANDIN, startTofuTestApp, type TofuTestApp } from './helpers/opentofu.ts';

const SECRET = 'git-lifecycle-secret-value';

const code = (replicas: number) =>
  JSON.stringify({
    variables: { region: {}, db_password: { sensitive: true } },
    resources: {
      'standin_cluster.main': { attributes: { region: '${var.region}', replicas } },
      'standin_database.main': { attributes: { password: '${var.db_password}' } },
    },
    outputs: { endpoint: { value: 'https://${var.region}.example.com' }, db_password: { value: '${var.db_password}', sensitive: true } },
  });

describe('a stack from a real Git repository, through the API alone: first plan to applied outputs and back to destroyed', () => {
  let t: TofuTestApp;
  let git: GitServer;
  let stackId: string;
  let projectId: string;
  let environmentId: string;

  before(async () => {
    t = await startTofuTestApp();
    git = await startGitServer();
    // In the namespace sandbox where this host can isolate (the stand-in is then bound at /plinth/bin/tofu).
    const engineEnv = { ...FAST_ENGINE_ENV, ...LOOPBACK_GIT_ENV, PLINTH_STATE_BACKEND_URL: t.baseUrl };
    let config = loadEngineConfig({ ...engineEnv, PLINTH_SANDBOX: 'auto' });
    if ((await config.sandbox.start()).mode !== 'namespaces') config = loadEngineConfig({ ...engineEnv, PLINTH_SANDBOX: 'off' });
    await t.startWorker({ sandbox: config.sandbox, tofu: { ...config.tofu, bin: STANDIN, backendUrl: t.baseUrl } });
    git.commit('public', 'main', 'stacks/app/standin.json', code(1));
    const source = (await t.call('POST', '/code-sources', { body: { data: { name: 'infra', url: git.repoUrl('public') } } })).body.data;
    const project = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data;
    const env = (await t.call('POST', '/environments', { body: { data: { projectId: project.id, givenId: 'prod', name: 'Prod' } } })).body.data;
    projectId = project.id;
    environmentId = env.id;
    const stack = await t.call('POST', '/stacks', {
      body: {
        data: {
          projectId: project.id,
          environmentId: env.id,
          name: 'app',
          source: { codeSourceId: source.id, ref: 'main', path: 'stacks/app' },
          variables: { region: 'eu' },
        },
      },
    });
    assert.equal(stack.status, 201, JSON.stringify(stack.body));
    stackId = stack.body.data.id;
    assert.equal((await t.call('PUT', `/stacks/${stackId}/sensitive-variables/db_password`, { body: { data: { value: SECRET } } })).status, 200);
  });
  after(async () => {
    await t.close();
    await git.close();
  });

  async function approveAndFinish(runId: string) {
    const approval = await waitForStep(t, runId, 'approve', 'WAITING_FOR_APPROVAL', 60_000);
    const plan = (await stepsOf(t, runId)).find((s) => s.stepId === 'plan');
    assert.equal((await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`)).status, 200);
    const done = await waitForRunStatus(t, runId, 'SUCCEEDED', 60_000);
    return { plan, done };
  }

  it('create, plan, approve, apply, outputs; a pushed change; destroy; every state version kept', async () => {
    const first = await triggerRun(t, stackId);
    const { plan, done } = await approveAndFinish(first.id);
    assert.deepEqual([plan.outputData.add, plan.outputData.change, plan.outputData.destroy], [2, 0, 0]);
    assert.equal(done.commitSha, git.head('public', 'main'));
    let stack = (await t.call('GET', `/stacks/${stackId}`)).body.data;
    assert.deepEqual(stack.output, { endpoint: 'https://eu.example.com', db_password: '(sensitive value)' });
    assert.equal(stack.latestRunId, first.id);
    const firstAppliedAt = stack.firstAppliedAt;
    assert.ok(firstAppliedAt);

    const pushed = git.commit('public', 'main', 'stacks/app/standin.json', code(3));
    const second = await triggerRun(t, stackId);
    const changed = await approveAndFinish(second.id);
    assert.equal((await getRun(t, second.id)).commitSha, pushed);
    assert.deepEqual(changed.plan.outputData.changedAddresses, ['standin_cluster.main']);
    stack = (await t.call('GET', `/stacks/${stackId}`)).body.data;
    assert.equal(stack.firstAppliedAt, firstAppliedAt);
    assert.equal(stack.latestRunId, second.id);

    const destroy = await triggerRun(t, stackId, { action: 'destroy' });
    const destroyed = await approveAndFinish(destroy.id);
    assert.equal(destroyed.plan.outputData.destroy, 2);
    assert.deepEqual((await t.call('GET', `/stacks/${stackId}`)).body.data.output, {});

    const versions = (await t.call('GET', `/stacks/${stackId}/state-versions`)).body.data;
    assert.deepEqual(
      versions.map((v: { serial: number }) => v.serial),
      [1, 2, 3],
    );
    assert.deepEqual(
      versions.map((v: { runId: string }) => v.runId),
      [first.id, second.id, destroy.id],
    );
    for (const run of [first, second, destroy]) {
      for (const step of await stepsOf(t, run.id)) assert.ok(!(await logLines(t, step.id)).join('\n').includes(SECRET), `${step.stepId} of ${run.id}`);
    }
    assert.equal((await t.call('DELETE', `/stacks/${stackId}`)).status, 204);
  });

  it('in the sandbox too, a cancelled apply is interrupted (SIGINT): state written, lock released', async () => {
    const slow = { resources: Object.fromEntries(['a', 'b', 'c', 'd'].map((n) => [`standin_vm.${n}`, { attributes: { name: n }, apply_ms: 400 }])) };
    git.commit('public', 'main', 'stacks/slow/standin.json', JSON.stringify(slow));
    const source = (await t.call('POST', '/code-sources', { body: { data: { name: 'slow', url: git.repoUrl('public') } } })).body.data;
    const created = await t.call('POST', '/stacks', {
      body: { data: { projectId, environmentId, name: 'slow', source: { codeSourceId: source.id, ref: 'main', path: 'stacks/slow' } } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const slowStack = created.body.data.id;
    const run = await triggerRun(t, slowStack, { autoapprove: true });
    const apply = await waitForStep(t, run.id, 'apply', 'RUNNING', 60_000);
    await waitForLine(t, apply.id, /standin_vm\.a: Creating/, 60_000);
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/cancel`)).status, 200);
    await waitForLine(t, apply.id, /Interrupt received/, 30_000);
    const versions = await waitFor(
      "the interrupted apply's state",
      async () => {
        const list = (await t.call('GET', `/stacks/${slowStack}/state-versions`)).body.data;
        return list.length ? list : undefined;
      },
      30_000,
    );
    const state = (await t.call('GET', `/stacks/${slowStack}/state-versions/${versions[0].id}`)).body.data.state;
    assert.ok(state.resources.length >= 1 && state.resources.length < 4, JSON.stringify(state.resources));
    assert.ok(JSON.stringify(state.resources).includes('"a"'), `the resource in flight at the cancel is in the state: ${JSON.stringify(state.resources)}`);
    await waitFor(
      'the lock to be released',
      async () => ((await t.call('GET', `/stacks/${slowStack}/state-lock`)).body.data.locked ? undefined : true),
      30_000,
    );
    const lines = await logLines(t, apply.id);
    assert.equal(lines.filter((l) => l.includes('Interrupt received')).length, 1, 'one interrupt, not two');
    assert.ok(!lines.some((l) => l.includes('Two interrupts received')), lines.join('\n'));
  });
});
