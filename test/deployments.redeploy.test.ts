import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import { taskDefinitionChecks } from '../src/deployments/task-definitions.ts';
import { DuePoller } from '../src/platform/due-poller.ts';
import { startAwsStandin, type AwsStandin } from './aws/aws-standin.ts';
import { deploymentEvent, taskEvent, type EcsService } from './helpers/aws-events.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { FAST_ENGINE_ENV, LOOPBACK_GIT_ENV, waitForRunStatus } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, ECS_ACCOUNT, publishModule } from './helpers/modules.ts';
import { STANDIN, startTofuTestApp, type TofuTestApp } from './helpers/opentofu.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

const ROLE_ARN = `arn:aws:iam::${ECS_ACCOUNT}:role/plinth-deployer`;
const WEB: EcsService = { account: ECS_ACCOUNT, region: 'us-west-2', cluster: 'shop', service: 'web' };
const TASK_DEFINITION = `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:task-definition/web:7`;
const LOGS = { logDriver: 'awslogs', options: { 'awslogs-group': '/ecs/web', 'awslogs-region': 'us-west-2', 'awslogs-stream-prefix': 'ecs' } };
const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

describe('redeploying and rolling back deployments', () => {
  let t: TofuTestApp;
  let git: GitServer;
  let aws: AwsStandin;
  let secret: string;
  let instanceId: string;
  let moduleDeploymentId: string;

  before(async () => {
    aws = await startAwsStandin();
    t = await startTofuTestApp({ env: { PLINTH_AWS_ENDPOINT_URL: aws.url, AWS_ACCESS_KEY_ID: 'AKIAPLINTHTEST', AWS_SECRET_ACCESS_KEY: 'plinth-test-secret' } });
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
    instanceId = (
      await t.call('POST', '/module-instances', {
        body: { data: { environmentId, moduleVersionId: container.versionId, givenId: 'web', name: 'Web', values: { name: 'web' } } },
      })
    ).body.data.id;
    const deploy = await t.call('POST', `/module-instances/${instanceId}/deploy`, { body: { data: { autoapprove: true } } });
    await waitForRunStatus(t, deploy.body.data.id, 'SUCCEEDED', 120_000);
    moduleDeploymentId = (await t.call('GET', `/deployments?moduleInstanceId=${instanceId}`)).body.data[0].id;
    const account = await t.call('POST', '/cloud-accounts', {
      body: { data: { givenId: 'prod', name: 'Prod', accountId: ECS_ACCOUNT, roleArn: ROLE_ARN } },
    });
    secret = account.body.data.ingestSecret;
    aws.taskDefinitions.set(TASK_DEFINITION, {
      taskDefinitionArn: TASK_DEFINITION,
      family: 'web',
      revision: 7,
      status: 'ACTIVE',
      containerDefinitions: [
        { name: 'web', image: 'nginx:1.27', essential: true, environment: [{ name: 'API_KEY', value: 'sk-live-secret' }], logConfiguration: LOGS },
      ],
      requiresCompatibilities: ['FARGATE'],
      networkMode: 'awsvpc',
      cpu: '256',
      memory: '512',
      // The JSON protocol's timestamps are epoch seconds.
      registeredAt: 1767225600,
    });
  });
  after(async () => {
    await t.close();
    await git.close();
    await aws.close();
  });

  const cloudAccountId = async () => (await t.call('GET', '/cloud-accounts')).body.data[0].id as string;
  const send = async (event: unknown) => {
    const res = await t.call('POST', `/cloud-accounts/${await cloudAccountId()}/events`, {
      token: null,
      headers: { 'x-plinth-ingest-secret': secret },
      body: event,
    });
    assert.ok(res.status < 300, JSON.stringify(res.body));
    return res.body.data;
  };
  /** ECS's clock: `minute` minutes after the tests started (deployments are ordered by when ECS started them). */
  const T0 = Date.now();
  const at = (minute: number) => new Date(T0 + minute * 60_000).toISOString();
  /** A finished container deployment of the service, its one task running TASK_DEFINITION. */
  async function finishedDeployment(ecsId: string, minute: number): Promise<string> {
    await send(deploymentEvent(WEB, ecsId, 'in-progress', at(minute)));
    const task = await send(taskEvent(WEB, ecsId, `task-${minute}`, 2, 'RUNNING', { taskDefinition: TASK_DEFINITION }));
    await send(deploymentEvent(WEB, ecsId, 'completed', at(minute + 1)));
    return task.deploymentId;
  }

  it("redeploys a container deployment: the stored task definition registered again and the service updated to it, as the account's role", async () => {
    const source = await finishedDeployment('ecs-svc/1100000000000000001', 1);
    aws.calls.length = 0;
    const res = await t.call('POST', `/deployments/${source}/redeploy`);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const redeploy = res.body.data;
    assert.equal(redeploy.deploymentType, 'CONTAINER_SERVICE');
    assert.equal(redeploy.triggerSource, 'REDEPLOY');
    assert.equal(redeploy.redeployOfDeploymentId, source);
    assert.equal(redeploy.status, 'IN_PROGRESS');
    assert.equal(redeploy.externalDeploymentId, 'ecs-svc/900000000000000001');
    assert.equal(redeploy.data.triggerChannel, 'API');
    assert.equal(redeploy.data.deployedTaskDefinition.arn, `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:task-definition/web:101`);
    // Environment values often hold secrets: shown by name, registered again whole.
    assert.deepEqual(redeploy.data.deployedTaskDefinition.definition.containerDefinitions, [
      { name: 'web', image: 'nginx:1.27', essential: true, environment: [{ name: 'API_KEY', value: '(sensitive)' }], logConfiguration: LOGS },
    ]);

    assert.deepEqual(
      aws.calls.map((c) => c.operation),
      ['AssumeRole', 'DescribeTaskDefinition', 'RegisterTaskDefinition', 'UpdateService'],
    );
    const [assume, , register, update] = aws.calls;
    assert.equal(assume.input.RoleArn, ROLE_ARN);
    assert.equal(assume.input.ExternalId, (await t.call('GET', '/cloud-accounts')).body.data[0].externalId, "the cloud account's external id, Plinth's");
    assert.equal(assume.accessKeyId, 'AKIAPLINTHTEST', "Plinth's own credentials assume the role");
    assert.equal(register.accessKeyId, 'ASIASTANDINASSUMED', 'ECS is called with the assumed role');
    assert.equal(register.input.family, 'web');
    assert.deepEqual((register.input.containerDefinitions as any)[0].environment, [{ name: 'API_KEY', value: 'sk-live-secret' }]);
    for (const readOnly of ['taskDefinitionArn', 'revision', 'status', 'registeredAt']) assert.equal(register.input[readOnly], undefined, readOnly);
    assert.equal(update.input.service, `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:service/shop/web`);
    assert.equal(update.input.taskDefinition, redeploy.data.deployedTaskDefinition.arn);

    // The new deployment follows the service deployment ECS started.
    const task = await send(
      taskEvent(WEB, redeploy.externalDeploymentId, 'task-r', 3, 'RUNNING', { taskDefinition: redeploy.data.deployedTaskDefinition.arn }),
    );
    assert.equal(task.deploymentId, redeploy.id);
    await send(deploymentEvent(WEB, redeploy.externalDeploymentId, 'completed', at(60)));
    const done = (await t.call('GET', `/deployments/${redeploy.id}`)).body.data;
    assert.equal(done.status, 'SUCCEEDED');
    assert.equal(done.triggerSource, 'REDEPLOY');
    // What was described is kept with the source: its next replay needs no DescribeTaskDefinition.
    const kept = (await t.call('GET', `/deployments/${source}`)).body.data;
    assert.equal(kept.data.deployedTaskDefinition.definition.family, 'web');
  });

  it('refuses a redeploy while another deployment of the instance is in progress', async () => {
    const source = await finishedDeployment('ecs-svc/1100000000000000002', 10);
    await send(deploymentEvent(WEB, 'ecs-svc/1100000000000000003', 'in-progress', at(20)));
    assertError(await t.call('POST', `/deployments/${source}/redeploy`), 409, 'Api:Deployment:IN_PROGRESS');
    await send(deploymentEvent(WEB, 'ecs-svc/1100000000000000003', 'completed', at(21)));
  });

  it('answers 502 with the AWS error code when AWS refuses, and keeps the failed deployment', async () => {
    const source = await finishedDeployment('ecs-svc/1100000000000000004', 30);
    aws.failNext('UpdateService', 'AccessDeniedException');
    const res = await t.call('POST', `/deployments/${source}/rollback`);
    assertError(res, 502, 'Aws:Request:FAILED');
    assert.match(res.body.message, /UpdateService: AccessDeniedException/);
    assert.equal(res.body.metadata?.awsErrorCode, 'AccessDeniedException', 'a super-administrator sees the metadata');
    const [failed] = (await t.call('GET', `/deployments?moduleInstanceId=${instanceId}&status=FAILED&order=desc`)).body.data;
    assert.equal(failed.rollbackToDeploymentId, source);
    assert.equal(failed.error.code, 'Aws:Request:FAILED');
  });

  it("retries AWS's throttling with the SDK's backoff, then rolls back", async () => {
    const source = await finishedDeployment('ecs-svc/1100000000000000005', 40);
    aws.failNext('RegisterTaskDefinition', 'ThrottlingException', { times: 2 });
    const res = await t.call('POST', `/deployments/${source}/rollback`);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.data.triggerSource, 'ROLLBACK');
    assert.equal(res.body.data.rollbackToDeploymentId, source);
    assert.equal(aws.calls.filter((c) => c.operation === 'RegisterTaskDefinition').length >= 3, true);
    await send(deploymentEvent(WEB, res.body.data.externalDeploymentId, 'completed', at(120)));
  });

  it('refuses to replay a container deployment whose task definition was never seen', async () => {
    await send(deploymentEvent(WEB, 'ecs-svc/1100000000000000006', 'in-progress', at(50)));
    const [unseen] = (await t.call('GET', `/deployments?moduleInstanceId=${instanceId}&status=IN_PROGRESS`)).body.data;
    await send(deploymentEvent(WEB, 'ecs-svc/1100000000000000006', 'failed', at(51)));
    assertError(await t.call('POST', `/deployments/${unseen.id}/redeploy`), 422, 'Api:Deployment:NOT_REDEPLOYABLE');
  });

  it("redeploys a module deploy as a new run of the instance's stack with the stored inputs and version", async () => {
    const res = await t.call('POST', `/deployments/${moduleDeploymentId}/redeploy`);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const redeploy = res.body.data;
    assert.equal(redeploy.deploymentType, 'MODULE');
    assert.equal(redeploy.redeployOfDeploymentId, moduleDeploymentId);
    assert.deepEqual(redeploy.data.module_input, { name: 'web' });
    const run = (await t.call('GET', `/pipeline-runs/${redeploy.pipelineRunId}`)).body.data;
    assert.deepEqual(run.data.module_input, { name: 'web' });
    // The stack already holds that release: its plan changes nothing, and the run ends without an apply.
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 120_000);
    const done = (await t.call('GET', `/deployments/${redeploy.id}`)).body.data;
    assert.equal(done.status, 'SUCCEEDED');
  });

  it('reads the task definition a deployment deploys, apart from its events, and gives its tasks their log streams', async () => {
    const ecsId = 'ecs-svc/1100000000000000007';
    await send(deploymentEvent(WEB, ecsId, 'in-progress', at(70)));
    const first = await send(taskEvent(WEB, ecsId, 'task-logs-a', 2, 'RUNNING', { taskDefinition: TASK_DEFINITION }));
    const before = (await t.call('GET', `/deployments/${first.deploymentId}`)).body.data;
    assert.equal(before.data.deployedTaskDefinition.definition, undefined, 'an event does not wait for AWS');
    const poller = new DuePoller(t.db, taskDefinitionChecks({ db: t.db, aws: t.app.config.aws }), 1, silent);
    await poller.runDueOnce();
    const after = (await t.call('GET', `/deployments/${first.deploymentId}`)).body.data;
    assert.equal(after.data.deployedTaskDefinition.definition.family, 'web');
    const streams = (id: string) => [
      { containerName: 'web', logGroupName: '/ecs/web', logStreamPrefix: 'ecs', region: 'us-west-2', streamName: `ecs/web/${id}` },
    ];
    const [taskA] = (await t.call('GET', `/deployment-resources?deploymentId=${first.deploymentId}`)).body.data;
    assert.deepEqual(taskA.logStreams, streams('task-logs-a'));
    await send(taskEvent(WEB, ecsId, 'task-logs-b', 2, 'RUNNING', { taskDefinition: TASK_DEFINITION }));
    const tasks = (await t.call('GET', `/deployment-resources?deploymentId=${first.deploymentId}`)).body.data;
    assert.deepEqual(
      tasks.find((r: any) => r.externalId.endsWith('/task-logs-b')).logStreams,
      streams('task-logs-b'),
      'a later task has them from its first event',
    );
    await send(deploymentEvent(WEB, ecsId, 'completed', at(71)));
  });

  it('lets no VIEWER redeploy and no other organization see the deployment', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assertError(await t.call('POST', `/deployments/${moduleDeploymentId}/redeploy`, { token: viewer.token }), 403);
    const other = await createOrganization(t);
    assertError(await t.call('POST', `/deployments/${moduleDeploymentId}/rollback`, { headers: inOrg(other) }), 404, 'Api:Deployment:NOT_FOUND');
  });
});
