import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import { awsEvent, deploymentEvent, serviceArn, taskEvent, type EcsService } from './helpers/aws-events.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { FAST_ENGINE_ENV, LOOPBACK_GIT_ENV, waitForRunStatus } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, ECS_ACCOUNT, publishModule } from './helpers/modules.ts';
import { STANDIN, startTofuTestApp, type TofuTestApp } from './helpers/opentofu.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

const ROLE_ARN = `arn:aws:iam::${ECS_ACCOUNT}:role/plinth`;
const WEB: EcsService = { account: ECS_ACCOUNT, region: 'us-west-2', cluster: 'shop', service: 'web' };

describe('container-service deployments from the cloud events of an AWS account', () => {
  let t: TofuTestApp;
  let git: GitServer;
  let accountId: string;
  let secret: string;
  let instanceId: string;

  before(async () => {
    t = await startTofuTestApp();
    git = await startGitServer();
    commitModules(git);
    const engineEnv = { ...FAST_ENGINE_ENV, ...LOOPBACK_GIT_ENV, PLINTH_STATE_BACKEND_URL: t.baseUrl };
    let config = loadEngineConfig({ ...engineEnv, PLINTH_SANDBOX: 'auto' });
    if ((await config.sandbox.start()).mode !== 'namespaces') config = loadEngineConfig({ ...engineEnv, PLINTH_SANDBOX: 'off' });
    await t.startWorker({ sandbox: config.sandbox, tofu: { ...config.tofu, bin: STANDIN, backendUrl: t.baseUrl }, concurrency: 2 });
    const codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data.id;
    const environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'prod' } } })).body.data.id;
    const container = await publishModule(t, codeSourceId, 'container');
    const created = await t.call('POST', '/module-instances', {
      body: { data: { environmentId, moduleVersionId: container.versionId, givenId: 'web', name: 'Web', values: { name: 'web' } } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    instanceId = created.body.data.id;
    const account = await t.call('POST', '/cloud-accounts', { body: { data: { givenId: 'prod', name: 'Prod', accountId: ECS_ACCOUNT, roleArn: ROLE_ARN } } });
    assert.equal(account.status, 201, JSON.stringify(account.body));
    accountId = account.body.data.id;
    secret = account.body.data.ingestSecret;
  });
  after(async () => {
    await t.close();
    await git.close();
  });

  const send = (event: unknown, options: { secret?: string | null; account?: string } = {}) =>
    t.call('POST', `/cloud-accounts/${options.account ?? accountId}/events`, {
      token: null,
      headers: options.secret === null ? {} : { 'x-plinth-ingest-secret': options.secret ?? secret },
      body: event,
    });
  const deploymentsOfInstance = async () => {
    const res = await t.call('GET', `/deployments?moduleInstanceId=${instanceId}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data as any[];
  };

  it('records a module deploy as a deployment that ends with its run, and whose stack then names the service', async () => {
    const deploy = await t.call('POST', `/module-instances/${instanceId}/deploy`, { body: { data: { autoapprove: true } } });
    assert.equal(deploy.status, 201, JSON.stringify(deploy.body));
    const [started] = await deploymentsOfInstance();
    assert.equal(started.deploymentType, 'MODULE');
    assert.equal(started.status, 'IN_PROGRESS');
    assert.equal(started.triggerSource, 'API');
    assert.equal(started.pipelineRunId, deploy.body.data.id);
    assert.deepEqual(started.data.module_input, { name: 'web' });
    await waitForRunStatus(t, deploy.body.data.id, 'SUCCEEDED', 120_000);
    const done = (await t.call('GET', `/deployments/${started.id}`)).body.data;
    assert.equal(done.status, 'SUCCEEDED');
    assert.ok(done.completedAt);
  });

  it('answers 401, the same for an unknown account, to an event without the account ingest secret', async () => {
    const event = deploymentEvent(WEB, 'ecs-svc/1000000000000000001', 'in-progress', '2026-01-01T00:00:00Z');
    assertError(await send(event, { secret: null }), 401, 'Api:CloudEvent:UNVERIFIED');
    assertError(await send(event, { secret: `${secret}x` }), 401, 'Api:CloudEvent:UNVERIFIED');
    assertError(await send(event, { account: 'no-such-account' }), 401, 'Api:CloudEvent:UNVERIFIED');
    // One account's secret, replayed to another's endpoint (another tenant's, same AWS account id).
    const other = await createOrganization(t, 'Secret replay');
    const theirs = await t.call('POST', '/cloud-accounts', {
      headers: inOrg(other),
      body: { data: { givenId: 'theirs', name: 'Theirs', accountId: ECS_ACCOUNT, roleArn: ROLE_ARN } },
    });
    assert.equal(theirs.status, 201, JSON.stringify(theirs.body));
    assertError(await send(event, { account: theirs.body.data.id }), 401, 'Api:CloudEvent:UNVERIFIED');
    assertError(await send(event, { account: accountId, secret: theirs.body.data.ingestSecret }), 401, 'Api:CloudEvent:UNVERIFIED');
    assertError(await send({ ...event, detail: undefined }), 400);
    assertError(await send('not json at all'), 400);
  });

  it('builds a container deployment and its tasks from events in any order, each resource following its own sequence', async () => {
    const deploymentId = 'ecs-svc/1000000000000000002';
    // A task event before the deployment's own: the deployment is recorded from it.
    const pending = await send(taskEvent(WEB, deploymentId, 'task-a', 1, 'PENDING'));
    assert.equal(pending.status, 200, JSON.stringify(pending.body));
    assert.equal(pending.body.data.outcome, 'APPLIED');
    const id = pending.body.data.deploymentId;
    assert.ok(id);
    assert.equal((await send(deploymentEvent(WEB, deploymentId, 'in-progress', '2026-01-01T00:00:00Z'))).body.data.deploymentId, id);
    assert.equal((await send(taskEvent(WEB, deploymentId, 'task-a', 3, 'RUNNING'))).body.data.outcome, 'APPLIED');
    // Version 2 arrives after version 3: it is kept, and changes nothing.
    const late = await send(taskEvent(WEB, deploymentId, 'task-a', 2, 'PROVISIONING'));
    assert.equal(late.status, 200);
    assert.equal(late.body.data.outcome, 'STALE');
    assert.equal((await send(deploymentEvent(WEB, deploymentId, 'completed', '2026-01-01T00:05:00Z'))).body.data.outcome, 'APPLIED');
    const stale = await send(deploymentEvent(WEB, deploymentId, 'in-progress', '2026-01-01T00:01:00Z'));
    assert.equal(stale.body.data.outcome, 'STALE');

    const deployment = (await t.call('GET', `/deployments/${id}`)).body.data;
    assert.equal(deployment.deploymentType, 'CONTAINER_SERVICE');
    assert.equal(deployment.status, 'SUCCEEDED');
    assert.equal(deployment.moduleInstanceId, instanceId);
    assert.equal(deployment.externalDeploymentId, deploymentId);
    assert.equal(deployment.triggerSource, 'EVENT_BUS');
    assert.equal(deployment.resourceArn, serviceArn(WEB));
    assert.equal(deployment.data.type, 'cloud:container-service');
    assert.equal(deployment.data.detectedVia, 'EVENT_BUS');
    assert.equal(deployment.data.serviceArn, serviceArn(WEB));
    assert.equal(deployment.data.clusterArn, `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:cluster/shop`);
    assert.equal(deployment.data.serviceDeploymentState.status, 'SUCCESSFUL');
    assert.deepEqual(deployment.data.deployedTaskDefinition, { arn: `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:task-definition/web:7`, revision: 7 });
    assert.deepEqual(
      deployment.data.events.map((e: any) => `${e.currentStep}/${e.totalSteps} ${e.startedAt}`),
      ['1/2 2026-01-01T00:00:00.000Z', '1/2 2026-01-01T00:01:00.000Z', '2/2 2026-01-01T00:05:00.000Z'],
    );

    const resources = (await t.call('GET', `/deployments/${id}/resources`)).body;
    assert.equal(resources.data.length, 1);
    assert.deepEqual((await t.call('GET', `/deployment-resources?deploymentId=${id}`)).body.data, resources.data);
    const task = resources.data[0];
    assert.equal(task.lastStatus, 'RUNNING');
    assert.equal(task.moduleDeploymentId, id);
    assert.equal(task.externalId, `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:task/shop/task-a`);
    assert.equal(task.data.type, 'CONTAINER_TASK');
    assert.equal(task.data.taskDefinitionFamily, 'web');
    assert.equal(task.data.taskDefinitionRevision, 7);
    assert.equal(task.data.pendingAt, '2026-01-01T00:00:01.000Z', 'what an earlier event said is kept');
    assert.ok(task.data.runningAt);
    assert.equal(task.data.provisioningAt, undefined, 'the late event changed nothing');

    // The record sits one level inside the envelope, its type data one level deeper.
    const one = await t.call('GET', `/deployment-resources/${task.id}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.data.data.id, task.id);
    assert.equal(one.body.data.data.data.taskArn, task.externalId);
  });

  it('records a task that stopped because a container failed, with the exit code of each container', async () => {
    const deploymentId = 'ecs-svc/1000000000000000003';
    await send(deploymentEvent(WEB, deploymentId, 'in-progress', '2026-01-02T00:00:00Z'));
    const stopped = taskEvent(WEB, deploymentId, 'task-b', 9, 'STOPPED', { fixture: 'ecs-task-state-change-ec2-stopped' });
    stopped.detail.containers[0].exitCode = 2;
    stopped.detail.stopCode = 'EssentialContainerExited';
    const res = await send(stopped);
    assert.equal(res.body.data.outcome, 'APPLIED');
    assert.equal((await send(deploymentEvent(WEB, deploymentId, 'failed', '2026-01-02T00:03:00Z'))).body.data.outcome, 'APPLIED');
    const deployment = (await t.call('GET', `/deployments/${res.body.data.deploymentId}`)).body.data;
    assert.equal(deployment.status, 'FAILED');
    assert.equal(deployment.error.code, 'Ecs:Deployment:FAILED');
    const [task] = (await t.call('GET', `/deployments/${deployment.id}/resources`)).body.data;
    assert.equal(task.lastStatus, 'STOPPED');
    assert.equal(task.data.exitCode, 2);
    assert.equal(task.data.stopCode, 'EssentialContainerExited');
    assert.deepEqual(task.data.containers, [{ name: 'Webapp', lastStatus: 'STOPPED', exitCode: 2 }]);
    assert.equal(task.error.code, 'Ecs:Task:CONTAINER_EXITED');
    assert.ok(task.stoppedAt);
    // The deployment before it deployed the same task definition: nothing to name as the previous one.
    assert.equal(deployment.data.previousTaskDefinition, undefined);
  });

  it('stores and acknowledges with 202 what it cannot apply, and a redelivery with 200 doing nothing', async () => {
    const other = { ...WEB, service: 'nobody-declares-this' };
    const unmatched = await send(deploymentEvent(other, 'ecs-svc/1000000000000000004', 'in-progress', '2026-01-03T00:00:00Z'));
    assert.equal(unmatched.status, 202);
    assert.equal(unmatched.body.data.outcome, 'UNMATCHED');
    const foreign = await send(deploymentEvent({ ...WEB, account: '999988887777' }, 'ecs-svc/1000000000000000005', 'in-progress', '2026-01-03T00:00:00Z'));
    assert.equal(foreign.status, 202, 'an event of another AWS account is not applied');
    assert.equal(foreign.body.data.outcome, 'UNMATCHED');
    // A kind of event Plinth does not read (a sample's envelope with another detail-type).
    const acm = awsEvent('acm-certificate-approaching-expiration', (e) => {
      e['detail-type'] = 'Some Future AWS Event';
    });
    const unknown = await send(acm);
    assert.equal(unknown.status, 202);
    assert.equal(unknown.body.data.outcome, 'UNKNOWN');
    const again = await send(acm);
    assert.equal(again.status, 200);
    assert.equal(again.body.data.duplicate, true);
    assert.equal(again.body.data.id, unknown.body.data.id);
    const before = (await deploymentsOfInstance()).length;
    const event = deploymentEvent(WEB, 'ecs-svc/1000000000000000006', 'in-progress', '2026-01-03T00:00:00Z');
    assert.equal((await send(event)).body.data.duplicate, false);
    assert.equal((await send(event)).body.data.duplicate, true);
    assert.equal((await deploymentsOfInstance()).length, before + 1);
  });

  it('undoes what a redelivery applied: the first delivery stands, alone or racing copies of itself', async () => {
    const deploymentId = 'ecs-svc/1000000000000000011';
    const first = deploymentEvent(WEB, deploymentId, 'in-progress', '2026-02-01T00:00:00Z');
    const stored = await send(first);
    assert.equal(stored.body.data.outcome, 'APPLIED');
    assert.equal((await send(deploymentEvent(WEB, deploymentId, 'completed', '2026-02-01T00:05:00Z'))).body.data.outcome, 'APPLIED');
    // Sent again after a later event: applied now, it would be STALE and join the history a second time.
    const again = await send(first);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.data, { ...stored.body.data, duplicate: true });
    const id = stored.body.data.deploymentId;
    const history = () => t.call('GET', `/deployments/${id}`).then((res) => res.body.data.data.events.map((e: any) => e.startedAt));
    assert.deepEqual(await history(), ['2026-02-01T00:00:00.000Z', '2026-02-01T00:05:00.000Z']);

    const task = taskEvent(WEB, deploymentId, 'task-race', 1, 'PENDING');
    const answers = await Promise.all(Array.from({ length: 6 }, () => send(task)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 200, 200]);
    assert.equal(answers.filter((a) => !a.body.data.duplicate).length, 1, JSON.stringify(answers.map((a) => a.body.data)));
    assert.equal(new Set(answers.map((a) => a.body.data.id)).size, 1, 'every copy names the stored event');
    assert.ok(answers.every((a) => a.body.data.outcome === 'APPLIED' && a.body.data.deploymentId === id));
    const tasks = (await t.call('GET', `/deployments/${id}/resources`)).body.data;
    assert.equal(tasks.filter((r: any) => r.externalId.endsWith('/task-race')).length, 1);
  });

  it('applies racing copies of a deployment event once: one history entry, one stored event', async () => {
    const event = deploymentEvent(WEB, 'ecs-svc/1000000000000000012', 'in-progress', '2026-02-02T00:00:00Z');
    const answers = await Promise.all(Array.from({ length: 6 }, () => send(event)));
    assert.equal(answers.filter((a) => a.status === 200 && !a.body.data.duplicate).length, 1, JSON.stringify(answers.map((a) => a.body)));
    assert.ok(answers.every((a) => a.status === 200 && a.body.data.outcome === 'APPLIED'));
    const id = answers[0].body.data.deploymentId;
    assert.ok(answers.every((a) => a.body.data.deploymentId === id));
    const deployment = (await t.call('GET', `/deployments/${id}`)).body.data;
    assert.deepEqual(
      deployment.data.events.map((e: any) => e.startedAt),
      ['2026-02-02T00:00:00.000Z'],
    );
  });

  it("keeps a deployment with the instance first matched, and never reaches another account's deployment of the same id", async () => {
    const deploymentId = 'ecs-svc/1000000000000000013';
    const first = await send(taskEvent(WEB, deploymentId, 'task-kept', 1, 'PENDING'));
    assert.equal(first.body.data.outcome, 'APPLIED');
    const { output } = await t.db.selectFrom('stacks').select('output').where('module_instance_id', '=', instanceId).executeTakeFirstOrThrow();
    await t.db
      .updateTable('stacks')
      .set({ output: JSON.stringify({}) })
      .where('module_instance_id', '=', instanceId)
      .execute();
    try {
      // The instance no longer declares the service: its started deployment keeps its events, a new one is nobody's.
      const later = await send(taskEvent(WEB, deploymentId, 'task-kept', 2, 'RUNNING'));
      assert.equal(later.body.data.outcome, 'APPLIED');
      assert.equal(later.body.data.deploymentId, first.body.data.deploymentId);
      assert.equal((await send(taskEvent(WEB, 'ecs-svc/1000000000000000014', 'task-new', 1, 'PENDING'))).body.data.outcome, 'UNMATCHED');
    } finally {
      await t.db
        .updateTable('stacks')
        .set({ output: JSON.stringify(output) })
        .where('module_instance_id', '=', instanceId)
        .execute();
    }
    // Another organization's cloud account of the same AWS account, sending the same ECS deployment id.
    const other = await createOrganization(t);
    const account = await t.call('POST', '/cloud-accounts', {
      headers: inOrg(other),
      body: { data: { givenId: 'prod', name: 'Prod', accountId: ECS_ACCOUNT, roleArn: ROLE_ARN } },
    });
    assert.equal(account.status, 201, JSON.stringify(account.body));
    const theirs = await send(taskEvent(WEB, deploymentId, 'task-kept', 3, 'STOPPED'), {
      account: account.body.data.id,
      secret: account.body.data.ingestSecret,
    });
    assert.equal(theirs.status, 202);
    assert.equal(theirs.body.data.outcome, 'UNMATCHED');
    const task = (await t.call('GET', `/deployments/${first.body.data.deploymentId}/resources`)).body.data.find((r: any) =>
      r.externalId.endsWith('/task-kept'),
    );
    assert.equal(task.lastStatus, 'RUNNING', "the other account's event changed nothing here");
  });

  it('answers hostile events with a 4xx or an acknowledgement, never a 5xx, and never waits long on one', async () => {
    const leap = deploymentEvent(WEB, 'ecs-svc/1000000000000000007', 'in-progress', '2026-01-03T00:00:00Z');
    leap.time = '2016-12-31T23:59:60Z';
    assertError(await send(leap), 400);
    const ancient = deploymentEvent(WEB, 'ecs-svc/1000000000000000008', 'in-progress', '2026-01-03T00:00:00Z');
    ancient.detail.updatedAt = '-200000-01-01T00:00:00Z';
    assert.ok((await send(ancient)).status < 300, 'an unreadable detail time falls back to the event time');
    const long = taskEvent(WEB, 'ecs-svc/1000000000000000008', 'task-long', 1, 'RUNNING');
    long.detail.taskDefinitionArn = `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:task-definition/${'a:'.repeat(100_000)}`;
    const started = Date.now();
    const res = await send(long);
    assert.equal(res.status, 202, 'a task event with a string past what ECS sends is not read');
    assert.ok(Date.now() - started < 2000);
    assertError(await t.call('POST', '/cloud-accounts/%00/events', { token: null, headers: { 'x-plinth-ingest-secret': secret }, body: long }), 401);
    // The event claims this account, but the service it names is another account's.
    const elsewhere = deploymentEvent(WEB, 'ecs-svc/1000000000000000009', 'in-progress', '2026-01-03T00:00:00Z');
    elsewhere.resources = [serviceArn({ ...WEB, account: '999988887777' })];
    assert.equal((await send(elsewhere)).body.data.outcome, 'UNMATCHED');
  });

  it('lists deployments newest first, filtered by type and status', async () => {
    const all = (await t.call('GET', `/deployments?moduleInstanceId=${instanceId}&order=desc`)).body.data;
    assert.ok(all.length >= 4);
    assert.ok(all[0].id > all[1].id);
    const modules = (await t.call('GET', '/deployments?deploymentType=MODULE')).body.data;
    assert.deepEqual(
      modules.map((d: any) => d.deploymentType),
      ['MODULE'],
    );
    const failed = (await t.call('GET', '/deployments?status=FAILED')).body.data;
    assert.ok(failed.length >= 1 && failed.every((d: any) => d.status === 'FAILED'));
    assertError(await t.call('GET', '/deployments?status=BROKEN'), 400);
  });

  it('rotates the ingest secret: the old one works until its time, then only the new one', async () => {
    const rotated = await t.call('POST', `/cloud-accounts/${accountId}/ingest-secret`, { body: { data: { previousSecretValidForSeconds: 3600 } } });
    assert.equal(rotated.status, 201, JSON.stringify(rotated.body));
    const fresh = rotated.body.data.ingestSecret;
    assert.notEqual(fresh, secret);
    assert.ok(rotated.body.data.previousIngestSecretExpiresAt);
    const event = () => deploymentEvent(WEB, `ecs-svc/2${Date.now()}`, 'in-progress', '2026-01-04T00:00:00Z');
    assert.equal((await send(event(), { secret })).status, 200, 'the previous secret, during the rotation');
    assert.equal((await send(event(), { secret: fresh })).status, 200);
    const read = (await t.call('GET', `/cloud-accounts/${accountId}`)).body.data;
    assert.equal(read.ingestSecret, undefined, 'the secret is shown once');
    assert.ok(read.previousIngestSecretExpiresAt);
    const now = await t.call('POST', `/cloud-accounts/${accountId}/ingest-secret`, { body: { data: { previousSecretValidForSeconds: 0 } } });
    assertError(await send(event(), { secret: fresh }), 401);
    assertError(await send(event(), { secret }), 401);
    secret = now.body.data.ingestSecret;
    assert.equal((await send(event())).status, 200);
    const audit = JSON.stringify((await t.call('GET', '/audit-events?limit=200')).body);
    assert.ok(!audit.includes(secret) && !audit.includes(fresh), 'no ingest secret reaches the audit log');
  });

  it('shows deployments to every member and to no other organization, and lets only managers rotate the secret', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    const [deployment] = (await t.call('GET', '/deployments', { token: viewer.token })).body.data;
    assert.ok(deployment);
    assertError(await t.call('POST', `/cloud-accounts/${accountId}/ingest-secret`, { token: viewer.token, body: { data: {} } }), 403);
    const other = await createOrganization(t);
    assertError(await t.call('GET', `/deployments/${deployment.id}`, { headers: inOrg(other) }), 404, 'Api:Deployment:NOT_FOUND');
    assert.deepEqual((await t.call('GET', '/deployments', { headers: inOrg(other) })).body.data, []);
    const [resource] = (await t.call('GET', `/deployments?deploymentType=CONTAINER_SERVICE`)).body.data;
    const task = (await t.call('GET', `/deployments/${resource.id}/resources`)).body.data[0];
    if (task) assertError(await t.call('GET', `/deployment-resources/${task.id}`, { headers: inOrg(other) }), 404, 'Api:DeploymentResource:NOT_FOUND');
  });
});
