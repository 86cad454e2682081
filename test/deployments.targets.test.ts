import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { taskTargetChecks } from '../src/deployments/task-targets.ts';
import { DuePoller } from '../src/platform/due-poller.ts';
import { startAwsStandin, type AwsStandin } from './aws/aws-standin.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { serviceArn, taskEvent, type EcsService } from './helpers/aws-events.ts';
import { LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, ECS_ACCOUNT, publishModule } from './helpers/modules.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

const REGION = 'us-west-2';
const WEB: EcsService = { account: ECS_ACCOUNT, region: REGION, cluster: 'shop', service: 'web' };
const WORKER: EcsService = { account: ECS_ACCOUNT, region: REGION, cluster: 'shop', service: 'worker' };
const TARGET_GROUP = `arn:aws:elasticloadbalancing:${REGION}:${ECS_ACCOUNT}:targetgroup/web-tg/73e2d6bc24d8a067`;
/** The address the documented Fargate sample's network interface has. */
const TASK_ADDRESS = '10.0.1.163';
const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

describe("a running task's target in its service's load balancer", () => {
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
    commitModules(git);
    const codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data.id;
    const environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'prod' } } })).body.data.id;
    const container = await publishModule(t, codeSourceId, 'container');
    for (const service of [WEB, WORKER]) {
      const created = await t.call('POST', '/module-instances', {
        body: {
          data: { environmentId, moduleVersionId: container.versionId, givenId: service.service, name: service.service, values: { name: service.service } },
        },
      });
      // The outputs an apply of the module would leave: no OpenTofu runs in this test.
      const output = { ecs_cluster_arn: `arn:aws:ecs:${REGION}:${ECS_ACCOUNT}:cluster/shop`, ecs_service_arn: serviceArn(service) };
      await t.db
        .updateTable('stacks')
        .set({ output: JSON.stringify(output) as never })
        .where('module_instance_id', '=', created.body.data.id)
        .execute();
    }
    const account = await t.call('POST', '/cloud-accounts', {
      body: { data: { givenId: 'prod', name: 'Prod', accountId: ECS_ACCOUNT, roleArn: `arn:aws:iam::${ECS_ACCOUNT}:role/plinth` } },
    });
    accountId = account.body.data.id;
    secret = account.body.data.ingestSecret;
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
      ['AssumeRole', 'DescribeServices', 'AssumeRole', 'DescribeTargetGroups', 'DescribeTargetHealth'],
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
});
