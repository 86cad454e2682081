import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DeploymentRow } from '../src/deployments/deployments.repo.ts';
import { readServiceDeployment, serviceDeploymentChecks } from '../src/deployments/service-deployments.ts';
import { claimDue } from '../src/platform/db/claim-due.ts';
import { taskTargetChecks } from '../src/deployments/task-targets.ts';
import { DuePoller } from '../src/platform/due-poller.ts';
import { startAwsStandin, type AwsStandin } from './aws/aws-standin.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { deploymentEvent, serviceArn, taskEvent, type EcsService } from './helpers/aws-events.ts';
import { LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { seedContainerServices } from './helpers/container-services.ts';
import { ECS_ACCOUNT } from './helpers/modules.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

const REGION = 'us-west-2';
const WEB: EcsService = { account: ECS_ACCOUNT, region: REGION, cluster: 'shop', service: 'web' };
const WORKER: EcsService = { account: ECS_ACCOUNT, region: REGION, cluster: 'shop', service: 'worker' };
const TARGET_GROUP = `arn:aws:elasticloadbalancing:${REGION}:${ECS_ACCOUNT}:targetgroup/web-tg/73e2d6bc24d8a067`;
/** The address the documented Fargate sample's network interface has. */
const TASK_ADDRESS = '10.0.1.163';
const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

describe('what worker processes read from AWS beyond the events: load balancer targets and service deployments', () => {
  let t: TestApp;
  let git: GitServer;
  let aws: AwsStandin;
  let accountId: string;
  let secret: string;
  let poller: DuePoller;

  before(async () => {
    aws = await startAwsStandin();
    t = await startTestApp({ env: { PLINTH_AWS_ENDPOINT_URL: aws.url, AWS_ACCESS_KEY_ID: 'AKIAPLINTHTEST', AWS_SECRET_ACCESS_KEY: 'plinth-test-secret' } });
    git = await startGitServer();
    ({ accountId, secret } = await seedContainerServices(t, git, [WEB, WORKER]));
    aws.services.set(serviceArn(WEB), { loadBalancers: [{ targetGroupArn: TARGET_GROUP, containerName: 'web', containerPort: 8080 }] });
    aws.services.set(serviceArn(WORKER), { loadBalancers: [] });
    aws.targetGroups.set(TARGET_GROUP, {
      TargetGroupName: 'web-tg',
      Protocol: 'HTTP',
      Port: 8080,
      TargetType: 'ip',
      HealthCheckProtocol: 'HTTP',
      HealthCheckPort: 'traffic-port',
      HealthCheckPath: '/healthz',
      HealthCheckIntervalSeconds: 15,
      HealthCheckTimeoutSeconds: 5,
      HealthyThresholdCount: 3,
      UnhealthyThresholdCount: 2,
      Matcher: '200-299',
    });
    poller = new DuePoller(t.db, taskTargetChecks({ db: t.db, aws: t.app.config.aws }), 1, silent);
  });
  after(async () => {
    await t.close();
    await git.close();
    await aws.close();
  });

  const send = async (event: unknown) => {
    const res = await t.call('POST', `/cloud-accounts/${accountId}/events`, { token: null, headers: { 'x-plinth-ingest-secret': secret }, body: event });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data;
  };
  const taskOf = async (taskId: string) => {
    const tasks = (await t.call('GET', '/deployment-resources')).body.data as any[];
    return tasks.find((r) => r.externalId.endsWith(`/${taskId}`));
  };
  /** Makes the task's next read due now, as the time it was put off to had come. */
  const dueNow = (taskId: string) =>
    t.db
      .updateTable('deployment_resources')
      .set({ target_check_at: new Date() })
      .where('external_id', 'like', `%/${taskId}`)
      .where('target_check_at', 'is not', null)
      .execute();
  const checkState = async (taskId: string) =>
    t.db
      .selectFrom('deployment_resources')
      .select(['target_check_at', 'target_check_attempts'])
      .where('external_id', 'like', `%/${taskId}`)
      .executeTakeFirstOrThrow();

  it('keeps the target group snapshot of a running task, read apart from its event and again until its health checks judge it', async () => {
    await send(taskEvent(WEB, 'ecs-svc/100', 'web-1', 1, 'RUNNING'));
    const running = await taskOf('web-1');
    assert.equal(running.data.taskTargetId, TASK_ADDRESS);
    assert.equal(running.data.targetGroupSnapshot, undefined, 'an event does not wait for AWS');

    aws.targetHealth.set(`${TARGET_GROUP} ${TASK_ADDRESS}`, {
      State: 'initial',
      Reason: 'Elb.RegistrationInProgress',
      Description: 'Target registration is in progress',
    });
    const callsBefore = aws.calls.length;
    await poller.runDueOnce();
    const pending = (await taskOf('web-1')).data.targetGroupSnapshot;
    assert.ok(Date.parse(pending.capturedAt) > Date.now() - 60_000);
    assert.deepEqual(
      { ...pending, capturedAt: undefined },
      {
        capturedAt: undefined,
        source: 'event-ingest',
        targetGroupArn: TARGET_GROUP,
        targetGroupName: 'web-tg',
        taskTarget: {
          id: `${TASK_ADDRESS}:8080`,
          rawId: TASK_ADDRESS,
          state: 'initial',
          port: 8080,
          reasonCode: 'Elb.RegistrationInProgress',
          description: 'Target registration is in progress',
        },
        healthCheck: {
          port: 'traffic-port',
          protocol: 'HTTP',
          path: '/healthz',
          matcherSummary: '200-299',
          intervalSeconds: 15,
          timeoutSeconds: 5,
          healthyThresholdCount: 3,
          unhealthyThresholdCount: 2,
        },
      },
    );
    const calls = aws.calls.slice(callsBefore);
    assert.deepEqual(
      calls.map((c) => c.operation),
      ['AssumeRole', 'DescribeServices', 'DescribeTargetGroups', 'DescribeTargetHealth'],
    );
    const health = calls.find((c) => c.operation === 'DescribeTargetHealth')!;
    assert.equal(health.accessKeyId, 'ASIASTANDINASSUMED', "asked as the cloud account's role");
    assert.deepEqual([health.input['Targets.member.1.Id'], health.input['Targets.member.1.Port']], [TASK_ADDRESS, '8080']);
    const later = await checkState('web-1');
    assert.ok(later.target_check_at && later.target_check_at.getTime() > Date.now(), 'pending health checks are read again later');

    aws.targetHealth.set(`${TARGET_GROUP} ${TASK_ADDRESS}`, { State: 'healthy' });
    await dueNow('web-1');
    await poller.runDueOnce();
    const judged = (await taskOf('web-1')).data.targetGroupSnapshot;
    assert.deepEqual(judged.taskTarget, { id: `${TASK_ADDRESS}:8080`, rawId: TASK_ADDRESS, state: 'healthy', port: 8080 });
    assert.equal((await checkState('web-1')).target_check_at, null, 'a judged target is not read again');
  });

  it('keeps no snapshot of a task whose service has no load balancer, and asks no more', async () => {
    await send(taskEvent(WORKER, 'ecs-svc/200', 'worker-1', 1, 'RUNNING'));
    await poller.runDueOnce();
    assert.equal((await taskOf('worker-1')).data.targetGroupSnapshot, undefined);
    assert.equal((await checkState('worker-1')).target_check_at, null);
  });

  it('asks again later when Elastic Load Balancing refuses, or ECS does not find the service', async () => {
    await send(taskEvent(WEB, 'ecs-svc/100', 'web-2', 1, 'RUNNING'));
    aws.failNext('DescribeTargetHealth', 'AccessDenied', { status: 403 });
    await poller.runDueOnce();
    assert.equal((await taskOf('web-2')).data.targetGroupSnapshot, undefined);
    const deferred = await checkState('web-2');
    assert.equal(deferred.target_check_attempts, 1);
    assert.ok(deferred.target_check_at && deferred.target_check_at.getTime() > Date.now() + 30_000);
    aws.targetHealth.set(`${TARGET_GROUP} ${TASK_ADDRESS}`, {
      State: 'unhealthy',
      Reason: 'Target.ResponseCodeMismatch',
      Description: 'Health checks failed with these codes: [502]',
    });
    await dueNow('web-2');
    await poller.runDueOnce();
    const snapshot = (await taskOf('web-2')).data.targetGroupSnapshot;
    assert.equal(snapshot.taskTarget.state, 'unhealthy');
    assert.equal(snapshot.taskTarget.reasonCode, 'Target.ResponseCodeMismatch');

    // ECS answers a service it does not find with a failure, not an error: asked again too.
    const gone: EcsService = { ...WEB, service: 'gone' };
    await t.db
      .updateTable('stacks')
      .set({ output: JSON.stringify({ ecs_service_arn: serviceArn(gone) }) as never })
      .where('output', '@>', JSON.stringify({ ecs_service_arn: serviceArn(WORKER) }) as never)
      .execute();
    await send(taskEvent(gone, 'ecs-svc/300', 'gone-1', 1, 'RUNNING'));
    await poller.runDueOnce();
    const missing = await checkState('gone-1');
    assert.equal(missing.target_check_attempts, 1);
    assert.ok(missing.target_check_at && missing.target_check_at.getTime() > Date.now() + 30_000);
  });

  it('reads a task once it runs, not on each event while it runs, and not once it stops', async () => {
    await send(taskEvent(WEB, 'ecs-svc/100', 'web-3', 1, 'PENDING'));
    assert.equal((await checkState('web-3')).target_check_at, null, 'a task not yet running has no target to read');
    await send(taskEvent(WEB, 'ecs-svc/100', 'web-3', 2, 'RUNNING'));
    assert.ok((await checkState('web-3')).target_check_at, 'due once it runs');
    await poller.runDueOnce();
    assert.equal((await checkState('web-3')).target_check_at, null);
    await send(taskEvent(WEB, 'ecs-svc/100', 'web-3', 3, 'RUNNING'));
    assert.equal((await checkState('web-3')).target_check_at, null, 'another event of the running task changes nothing');

    await send(taskEvent(WEB, 'ecs-svc/100', 'web-4', 1, 'RUNNING'));
    assert.ok((await checkState('web-4')).target_check_at);
    await send(taskEvent(WEB, 'ecs-svc/100', 'web-4', 2, 'STOPPED'));
    assert.equal((await checkState('web-4')).target_check_at, null, 'a stopped task is not read');
  });

  it('reads no target of a task without an address of its own (bridge mode on EC2)', async () => {
    await send(taskEvent(WEB, 'ecs-svc/100', 'web-ec2', 1, 'RUNNING', { fixture: 'ecs-task-state-change-ec2-running-legacy-2016' }));
    const task = await taskOf('web-ec2');
    assert.equal(task.data.taskTargetId, undefined);
    assert.equal((await checkState('web-ec2')).target_check_at, null);
  });

  describe('service deployments', () => {
    const reads = () => new DuePoller(t.db, serviceDeploymentChecks({ db: t.db, aws: t.app.config.aws }), 1, silent);
    const revision = (id: string, requested: number, running: number, pending: number) => ({
      arn: `arn:aws:ecs:${REGION}:${ECS_ACCOUNT}:service-revision/shop/web/${id}`,
      requestedTaskCount: requested,
      runningTaskCount: running,
      pendingTaskCount: pending,
    });
    const kept = (id: string, requested: number, running: number, pending: number) => ({
      serviceRevisionArn: `arn:aws:ecs:${REGION}:${ECS_ACCOUNT}:service-revision/shop/web/${id}`,
      requestedTaskCount: requested,
      runningTaskCount: running,
      pendingTaskCount: pending,
    });
    const deploymentOf = async (id: string) => (await t.call('GET', `/deployments/${id}`)).body.data;
    const serviceCheck = (ecsId: string) =>
      t.db
        .selectFrom('deployments')
        .select(['service_check_at', 'service_check_attempts'])
        .where('external_deployment_id', '=', ecsId)
        .executeTakeFirstOrThrow();

    it('reads the service deployment ECS names for the primary deployment: its ARN, status, strategy and revisions', async () => {
      const ecsId = 'ecs-svc/4980306466373577095';
      const arn = `arn:aws:ecs:${REGION}:${ECS_ACCOUNT}:service-deployment/shop/web/NCWGC2ZR-taawPAYrIaU5`;
      aws.services.set(serviceArn(WEB), {
        ...aws.services.get(serviceArn(WEB))!,
        deployments: [
          { id: ecsId, status: 'PRIMARY' },
          { id: 'ecs-svc/1000000000000000001', status: 'ACTIVE' },
        ],
        currentServiceDeployment: arn,
      });
      aws.serviceDeployments.set(arn, {
        status: 'IN_PROGRESS',
        lifecycleStage: 'BAKE_TIME',
        deploymentConfiguration: { strategy: 'BLUE_GREEN' },
        sourceServiceRevisions: [revision('1111', 2, 2, 0)],
        targetServiceRevision: revision('2222', 2, 1, 1),
      });
      const started = await send(deploymentEvent(WEB, ecsId, 'in-progress', new Date(Date.now() - 60_000).toISOString()));
      assert.equal((await deploymentOf(started.deploymentId)).data.serviceDeploymentArn, undefined, 'an event does not wait for AWS');

      await reads().runDueOnce();
      const read = (await deploymentOf(started.deploymentId)).data;
      assert.equal(read.serviceDeploymentArn, arn);
      assert.ok(Date.parse(read.serviceDeploymentState.observedAt) > Date.now() - 60_000);
      assert.deepEqual(
        { ...read.serviceDeploymentState, observedAt: undefined },
        {
          observedAt: undefined,
          serviceDeploymentArn: arn,
          status: 'IN_PROGRESS',
          acceptsNativeStandbyRevert: true,
          lifecycleStage: 'BAKE_TIME',
          strategy: 'BLUE_GREEN',
          sourceServiceRevisions: [kept('1111', 2, 2, 0)],
          targetServiceRevision: kept('2222', 2, 1, 1),
        },
      );
      const pending = await serviceCheck(ecsId);
      assert.ok(pending.service_check_at && pending.service_check_at.getTime() > Date.now(), 'one in progress is read again later');

      // The completion event is the newer observation; what ECS was read to say stays beside it.
      await send(deploymentEvent(WEB, ecsId, 'completed', new Date(Date.now() + 1000).toISOString()));
      const completed = (await deploymentOf(started.deploymentId)).data.serviceDeploymentState;
      assert.equal(completed.status, 'SUCCESSFUL');
      assert.equal(completed.acceptsNativeStandbyRevert, false);
      assert.equal(completed.lifecycleStage, undefined, 'the stage was the earlier observation’s');
      assert.equal(completed.serviceDeploymentArn, arn);
      assert.deepEqual(completed.targetServiceRevision, kept('2222', 2, 1, 1));

      aws.serviceDeployments.set(arn, {
        status: 'SUCCESSFUL',
        deploymentConfiguration: { strategy: 'BLUE_GREEN' },
        sourceServiceRevisions: [revision('1111', 0, 0, 0)],
        targetServiceRevision: revision('2222', 2, 2, 0),
      });
      const callsBefore = aws.calls.length;
      await reads().runDueOnce();
      const done = (await deploymentOf(started.deploymentId)).data.serviceDeploymentState;
      assert.equal(done.status, 'SUCCESSFUL');
      assert.deepEqual(done.targetServiceRevision, kept('2222', 2, 2, 0));
      assert.deepEqual(
        aws.calls.slice(callsBefore).map((c) => c.operation),
        ['AssumeRole', 'DescribeServiceDeployments'],
        'its ARN known, the service is not described again',
      );
      assert.equal((await serviceCheck(ecsId)).service_check_at, null, 'one that has ended is not read again');
    });

    it('keeps the newer observation of the status, an event’s, beside what only ECS says', async () => {
      const ecsId = 'ecs-svc/4980306466373570002';
      const arn = `arn:aws:ecs:${REGION}:${ECS_ACCOUNT}:service-deployment/shop/web/newer-event`;
      aws.services.set(serviceArn(WEB), {
        ...aws.services.get(serviceArn(WEB))!,
        deployments: [{ id: ecsId, status: 'PRIMARY' }],
        currentServiceDeployment: arn,
      });
      aws.serviceDeployments.set(arn, {
        status: 'IN_PROGRESS',
        deploymentConfiguration: { strategy: 'ROLLING' },
        targetServiceRevision: revision('3333', 3, 1, 2),
      });
      const started = await send(deploymentEvent(WEB, ecsId, 'in-progress', '2026-04-01T00:00:00Z'));
      // ECS's clock ahead of the worker's: the completion event is observed later than the read.
      await send(deploymentEvent(WEB, ecsId, 'completed', '2099-01-01T00:00:00Z'));
      await reads().runDueOnce();
      const state = (await deploymentOf(started.deploymentId)).data.serviceDeploymentState;
      assert.equal(state.status, 'SUCCESSFUL');
      assert.equal(state.observedAt, '2099-01-01T00:00:00.000Z');
      assert.equal(state.serviceDeploymentArn, arn);
      assert.equal(state.strategy, 'ROLLING');
      assert.deepEqual(state.targetServiceRevision, kept('3333', 3, 1, 2));
    });

    it('a deployment event that comes while ECS is read keeps the read it asked for', async () => {
      const ecsId = 'ecs-svc/4980306466373570003';
      const arn = `arn:aws:ecs:${REGION}:${ECS_ACCOUNT}:service-deployment/shop/web/during`;
      aws.services.set(serviceArn(WEB), {
        ...aws.services.get(serviceArn(WEB))!,
        deployments: [{ id: ecsId, status: 'PRIMARY' }],
        currentServiceDeployment: arn,
      });
      aws.serviceDeployments.set(arn, { status: 'SUCCESSFUL', deploymentConfiguration: { strategy: 'ROLLING' } });
      await send(deploymentEvent(WEB, ecsId, 'in-progress', '2026-05-01T00:00:00Z'));
      const claimed = await claimDue<DeploymentRow>(t.db, ['deployments', 'service_check_at'], 300);
      assert.equal(claimed?.external_deployment_id, ecsId);
      await send(deploymentEvent(WEB, ecsId, 'completed', '2026-05-01T00:10:00Z'));
      await readServiceDeployment({ db: t.db, aws: t.app.config.aws }, claimed!);
      const due = await serviceCheck(ecsId);
      assert.ok(due.service_check_at && due.service_check_at.getTime() <= Date.now(), 'still due now: the read it finished began before the event');
      await reads().runDueOnce();
      assert.equal((await serviceCheck(ecsId)).service_check_at, null);
    });

    it('leaves the ARN unknown when another deployment of the service is the primary one by the time it is read', async () => {
      const ecsId = 'ecs-svc/4980306466373570001';
      aws.services.set(serviceArn(WEB), {
        ...aws.services.get(serviceArn(WEB))!,
        deployments: [{ id: 'ecs-svc/4980306466373579999', status: 'PRIMARY' }],
        currentServiceDeployment: `arn:aws:ecs:${REGION}:${ECS_ACCOUNT}:service-deployment/shop/web/later`,
      });
      const started = await send(deploymentEvent(WEB, ecsId, 'in-progress', '2026-03-01T00:00:00Z'));
      await reads().runDueOnce();
      const data = (await deploymentOf(started.deploymentId)).data;
      assert.equal(data.serviceDeploymentArn, undefined);
      assert.equal(data.serviceDeploymentState.status, 'IN_PROGRESS', 'the events still say how it goes');
      assert.equal((await serviceCheck(ecsId)).service_check_at, null);
    });
  });
});
