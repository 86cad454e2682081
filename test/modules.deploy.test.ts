import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import { assertError, createOrganization, inOrg } from './helpers/callers.ts';
import { FAST_ENGINE_ENV, getRun, LOOPBACK_GIT_ENV, waitFor, waitForRunStatus } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, MODULES, publishModule, type PublishedModule } from './helpers/modules.ts';
import { STANDIN, startTofuTestApp, type TofuTestApp } from './helpers/opentofu.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

describe('deploying module instances from a real repository with the OpenTofu stand-in', () => {
  let t: TofuTestApp;
  let git: GitServer;
  let codeSourceId: string;
  let projectId: string;
  let network: PublishedModule;
  let database: PublishedModule;
  let service: PublishedModule;

  before(async () => {
    t = await startTofuTestApp();
    git = await startGitServer();
    commitModules(git);
    const engineEnv = { ...FAST_ENGINE_ENV, ...LOOPBACK_GIT_ENV, PLINTH_STATE_BACKEND_URL: t.baseUrl };
    let config = loadEngineConfig({ ...engineEnv, PLINTH_SANDBOX: 'auto' });
    if ((await config.sandbox.start()).mode !== 'namespaces') config = loadEngineConfig({ ...engineEnv, PLINTH_SANDBOX: 'off' });
    await t.startWorker({ sandbox: config.sandbox, tofu: { ...config.tofu, bin: STANDIN, backendUrl: t.baseUrl }, concurrency: 4 });
    codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data.id;
    network = await publishModule(t, codeSourceId, 'network');
    database = await publishModule(t, codeSourceId, 'database');
    service = await publishModule(t, codeSourceId, 'service');
  });
  after(async () => {
    await t.close();
    await git.close();
  });

  const environment = async (givenId: string) =>
    (await t.call('POST', '/environments', { body: { data: { projectId, givenId, name: givenId } } })).body.data.id as string;
  const create = async (environmentId: string, givenId: string, version: PublishedModule, values: Record<string, unknown>) => {
    const res = await t.call('POST', '/module-instances', {
      body: { data: { environmentId, moduleVersionId: version.versionId, givenId, name: givenId, values } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  };
  const ref = (instance: string, output: string, path?: string) => ({ $ref: { instance, output, ...(path ? { path } : {}) } });
  const stackOutput = async (stackId: string) => (await t.call('GET', `/stacks/${stackId}`)).body.data.output;

  /** network → database → service, each consuming the one before. */
  async function chain(envId: string, db: PublishedModule = database) {
    const net = await create(envId, 'net', network, { name: 'main' });
    const dbi = await create(envId, 'db', db, { vpc_id: ref('net', 'vpc_id'), subnet: ref('net', 'subnet_ids', '/0') });
    const svc = await create(envId, 'svc', service, { endpoint: ref('db', 'endpoint'), cpu: 512 });
    return { net, db: dbi, svc };
  }

  it('deploys a three-instance chain in graph order, each consuming the outputs its producer applied', async () => {
    const envId = await environment('prod');
    const { net, db, svc } = await chain(envId);
    const res = await t.call('POST', `/environments/${envId}/deploy`, { body: { data: { autoapprove: true } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.data.runs.map((r: { givenId: string }) => r.givenId),
      ['net', 'db', 'svc'],
    );
    const [netRun, dbRun, svcRun] = res.body.data.runs.map((r: { run: any }) => r.run);
    assert.deepEqual(dbRun.queueState.blockingModuleInstanceId, net.id);
    assert.equal(dbRun.queueState.blockingModuleName, 'net');
    assert.equal(svcRun.queueState.blockingModuleInstanceId, db.id);
    assert.equal(svcRun.queueReason, 'WAITING_FOR_STACK');
    assert.deepEqual(netRun.data, { kind: 'stack', module_input: { name: 'main', cidr: '10.0.0.0/16' }, module_version_id: network.versionId });

    const done = await waitForRunStatus(t, svcRun.id, 'SUCCEEDED', 120_000);
    const finishedNet = await getRun(t, netRun.id);
    const finishedDb = await getRun(t, dbRun.id);
    assert.equal(finishedNet.status, 'SUCCEEDED');
    assert.equal(finishedDb.status, 'SUCCEEDED');
    assert.ok(finishedNet.completedAt <= finishedDb.startedAt, 'the database started after the network finished');
    assert.ok(finishedDb.completedAt <= done.startedAt, 'the service started after the database finished');
    assert.deepEqual(await stackOutput(net.stackId), { vpc_id: 'vpc-main', subnet_ids: ['subnet-a', 'subnet-b'] });
    assert.deepEqual(await stackOutput(db.stackId), { endpoint: 'db.vpc-main' });
    assert.deepEqual(await stackOutput(svc.stackId), { url: 'https://db.vpc-main' });

    const applied = (await t.call('GET', `/module-instances/${svc.id}`)).body.data;
    assert.equal(applied.appliedVersionId, service.versionId);
    assert.deepEqual(applied.references[0].messages, []);
    const graph = (await t.call('GET', `/environments/${envId}/module-graph`)).body.data;
    assert.equal(graph.edges.length, 3);
    assert.ok(graph.edges.every((e: { messages: unknown[] }) => e.messages.length === 0));

    // Written again as they were (references by givenId, which the deploy recorded by id): nothing changes.
    const same = await t.call('PATCH', `/module-instances/${db.id}`, { body: { data: { values: db.values } } });
    assert.equal(same.status, 200, JSON.stringify(same.body));
    const again = await t.call('POST', `/environments/${envId}/deploy`, { body: { data: { autoapprove: true } } });
    assert.deepEqual(again.body.data.runs, []);
    assert.deepEqual(
      again.body.data.unchanged.map((u: { givenId: string }) => u.givenId),
      ['net', 'db', 'svc'],
    );

    // Once deployed, the rules on deployed values hold.
    const renamed = await t.call('PATCH', `/module-instances/${net.id}`, { body: { data: { values: { name: 'other' } } } });
    assertError(renamed, 422, 'Api:ModuleInstance:INVALID_INPUTS');
    assert.deepEqual(renamed.body.details[0].items, ['/data/values/name (Network name): is immutable once deployed: it must stay "main"']);
    const shrunk = await t.call('PATCH', `/module-instances/${svc.id}`, { body: { data: { values: { endpoint: ref('db', 'endpoint'), cpu: 256 } } } });
    assert.deepEqual(shrunk.body.details[0].items, ['/data/values/cpu (CPU units): must not go below the deployed value 512']);

    // An immutable input renamed by a new version keeps its deployed value through moved_from.
    const v2 = await t.call('POST', '/module-versions', {
      body: {
        data: {
          moduleDefinitionId: network.definitionId,
          version: '2.0.0',
          source: { codeSourceId, ref: 'main', path: MODULES.network.path },
          inputs: [
            { id: 'network_name', label: 'Network name', type: 'string', required: true, immutable: true, moved_from: ['name'] },
            { id: 'cidr', label: 'CIDR block', type: 'string', default: '10.0.0.0/16' },
          ],
          outputs: MODULES.network.outputs,
        },
      },
    });
    assert.equal(v2.status, 201, JSON.stringify(v2.body));
    const upgraded = await t.call('POST', `/module-instances/${net.id}/upgrade`, { body: { data: { moduleVersionId: v2.body.data.id } } });
    assert.equal(upgraded.status, 200, JSON.stringify(upgraded.body));
    assert.deepEqual(upgraded.body.data.values, { network_name: 'main' });
    const changed = await t.call('PATCH', `/module-instances/${net.id}`, { body: { data: { values: { network_name: 'other' } } } });
    assert.deepEqual(changed.body.details[0].items, ['/data/values/network_name (Network name): is immutable once deployed: it must stay "main"']);
  });

  it('stops the rest of the chain when the middle deploy fails', async () => {
    const envId = await environment('staging');
    const broken = await t.call('POST', '/module-definitions', { body: { data: { type: 'aws/broken-database', name: 'broken' } } });
    const brokenVersion = await t.call('POST', '/module-versions', {
      body: {
        data: {
          moduleDefinitionId: broken.body.data.id,
          version: '1.0.0',
          source: { codeSourceId, ref: 'main', path: 'modules/database-broken' },
          inputs: MODULES.database.inputs,
          outputs: MODULES.database.outputs,
        },
      },
    });
    assert.equal(brokenVersion.status, 201, JSON.stringify(brokenVersion.body));
    const { svc } = await chain(envId, { definitionId: broken.body.data.id, versionId: brokenVersion.body.data.id });
    const res = await t.call('POST', `/environments/${envId}/deploy`, { body: { data: { autoapprove: true } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const [, dbRun, svcRun] = res.body.data.runs.map((r: { run: any }) => r.run);
    await waitForRunStatus(t, dbRun.id, 'FAILED', 120_000);
    const cancelled = await waitForRunStatus(t, svcRun.id, 'CANCELLED', 30_000);
    assert.match(cancelled.error.message, /which this run waited for, did not succeed/);
    assert.equal(cancelled.startedAt, undefined, 'the service never started');
    assert.equal((await t.call('GET', `/module-instances/${svc.id}`)).body.data.appliedVersionId, undefined);
  });

  it('deploys one instance: its run records what it deploys and waits for its approval', async () => {
    const envId = await environment('single');
    const net = await create(envId, 'net', network, { name: 'single' });
    const res = await t.call('POST', `/module-instances/${net.id}/deploy`);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.data.attachedEntityId, net.stackId);
    assert.equal(res.body.data.data.module_version_id, network.versionId);
    const direct = await t.call('POST', `/stacks/${net.stackId}/pipeline-run`, { body: { data: {} } });
    assertError(direct, 409, 'Api:Stack:MANAGED_BY_MODULE_INSTANCE');
    await t.call('POST', `/pipeline-runs/${res.body.data.id}/cancel`);
  });

  it('deletes a deployed instance after its destroy run, with its stack', async () => {
    const envId = await environment('doomed');
    const net = await create(envId, 'net', network, { name: 'doomed' });
    const deploy = await t.call('POST', `/module-instances/${net.id}/deploy`, { body: { data: { autoapprove: true } } });
    await waitForRunStatus(t, deploy.body.data.id, 'SUCCEEDED', 120_000);
    const res = await t.call('DELETE', `/module-instances/${net.id}`);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const runId = res.body.data.deletingRunId;
    assert.equal(typeof runId, 'string');
    assertError(await t.call('PATCH', `/module-instances/${net.id}`, { body: { data: { name: 'x' } } }), 409, 'Api:ModuleInstance:DELETING');
    const consumer = await t.call('POST', '/module-instances', {
      body: { data: { environmentId: envId, moduleVersionId: service.versionId, givenId: 'late', name: 'late', values: { endpoint: ref('net', 'vpc_id') } } },
    });
    assertError(consumer, 422, 'Api:ModuleInstance:INVALID_INPUTS');
    assert.match(consumer.body.details[0].items[0], /is being deleted/);
    // The destroy run goes with the stack it destroyed: the instance's 404 is how its success shows.
    await waitFor('the instance to be deleted', async () => ((await t.call('GET', `/module-instances/${net.id}`)).status === 404 ? true : undefined), 120_000);
    assertError(await t.call('GET', `/module-instances/${net.id}`), 404, 'Api:ModuleInstance:NOT_FOUND');
    assertError(await t.call('GET', `/stacks/${net.stackId}`), 404, 'Api:Stack:NOT_FOUND');
  });

  it("instantiates a global definition in two organizations, which never see each other's instances", async () => {
    const global = await publishModule(t, codeSourceId, 'network', { global: true, version: '1.0.0' }).catch(async () => {
      // The organization already has aws/network: a global one of the same type is its own row.
      return publishModule(t, codeSourceId, 'network', { global: true, version: '1.0.0' });
    });
    const orgA = await createOrganization(t, 'Org A');
    const orgB = await createOrganization(t, 'Org B');
    const instanceIn = async (org: string, givenId: string) => {
      const project = (await t.call('POST', '/projects', { headers: inOrg(org), body: { data: { givenId: 'p', name: 'P' } } })).body.data.id;
      const env = (await t.call('POST', '/environments', { headers: inOrg(org), body: { data: { projectId: project, givenId: 'e', name: 'E' } } })).body.data
        .id;
      const res = await t.call('POST', '/module-instances', {
        headers: inOrg(org),
        body: { data: { environmentId: env, moduleVersionId: global.versionId, givenId, name: givenId, values: { name: givenId } } },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.data;
    };
    const a = await instanceIn(orgA, 'net-a');
    const b = await instanceIn(orgB, 'net-b');
    const listedA = await t.call('GET', `/module-instances?moduleDefinitionId=${global.definitionId}`, { headers: inOrg(orgA) });
    assert.deepEqual(
      listedA.body.data.map((i: { id: string }) => i.id),
      [a.id],
    );
    assertError(await t.call('GET', `/module-instances/${b.id}`, { headers: inOrg(orgA) }), 404, 'Api:ModuleInstance:NOT_FOUND');
    // Org B checks out the global module's code, which lives in the publishing organization's code source.
    const deploy = await t.call('POST', `/module-instances/${b.id}/deploy`, { headers: inOrg(orgB), body: { data: { autoapprove: true } } });
    assert.equal(deploy.status, 201, JSON.stringify(deploy.body));
    const runOfB = async () => (await t.call('GET', `/pipeline-runs/${deploy.body.data.id}`, { headers: inOrg(orgB) })).body.data;
    // One read per probe: two reads could see QUEUED, then RUNNING, and stop waiting too soon.
    const finished = await waitFor(
      'the deploy in org B to finish',
      async () => {
        const run = await runOfB();
        return run.status === 'RUNNING' || run.status === 'QUEUED' ? undefined : run;
      },
      120_000,
    );
    assert.equal(finished.status, 'SUCCEEDED', JSON.stringify(finished.error));
    assert.deepEqual((await t.call('GET', `/stacks/${b.stackId}`, { headers: inOrg(orgB) })).body.data.output.vpc_id, 'vpc-net-b');
  });

  it('a waiting deploy: its instance cannot be deleted, a retry after a cancel takes its stack, changed references cancel it', async () => {
    const envId = await environment('waiting');
    const net = await create(envId, 'net', network, { name: 'waiting' });
    const svc = await create(envId, 'svc', service, { endpoint: ref('net', 'vpc_id') });
    // The producer's deploy waits for its approval: its stack stays busy.
    const producerRun = (await t.call('POST', `/module-instances/${net.id}/deploy`)).body.data;
    const waiting = (await t.call('POST', `/module-instances/${svc.id}/deploy`, { body: { data: { autoapprove: true } } })).body.data;
    assert.equal(waiting.queueState.blockingModuleInstanceId, net.id);
    assertError(await t.call('DELETE', `/module-instances/${svc.id}`), 409, 'Api:ModuleInstance:BUSY');
    const blocked = await t.call('POST', '/module-instances', {
      body: { data: { environmentId: envId, moduleVersionId: service.versionId, givenId: 'svc2', name: 'svc2', values: { endpoint: ref('net', 'vpc_id') } } },
    });
    assert.equal(blocked.status, 201, JSON.stringify(blocked.body));
    const pipeline = (await t.call('GET', `/stacks/${svc.stackId}`)).body.data.changePipelineId;
    const version = await t.call('POST', '/pipeline-versions', {
      body: { data: { pipelineId: pipeline, config: { steps: [{ id: 'x', name: 'x', type: 'script', with: { command: 'true' } }] } } },
    });
    assertError(version, 409, 'Api:Stack:MANAGED_BY_MODULE_INSTANCE');

    assert.equal((await t.call('POST', `/pipeline-runs/${waiting.id}/cancel`)).status, 200);
    assert.equal((await t.call('POST', `/pipeline-runs/${waiting.id}/retry`)).status, 200);
    const retried = await getRun(t, waiting.id);
    assert.notEqual(retried.queueState.blockingModuleInstanceId, net.id, "a retried run starts from its own stack's queue");
    await t.call('POST', `/pipeline-runs/${waiting.id}/cancel`);

    const second = (await t.call('POST', `/module-instances/${svc.id}/deploy`)).body.data;
    assert.equal(second.queueState.blockingModuleInstanceId, net.id);
    const unreferenced = await t.call('PATCH', `/module-instances/${svc.id}`, { body: { data: { values: { endpoint: 'literal' } } } });
    assert.equal(unreferenced.status, 200, JSON.stringify(unreferenced.body));
    const cancelled = await getRun(t, second.id);
    assert.equal(cancelled.status, 'CANCELLED', 'its references changed');
    await t.call('POST', `/pipeline-runs/${producerRun.id}/cancel`);
  });
});
