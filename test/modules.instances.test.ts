import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, publishModule, type PublishedModule } from './helpers/modules.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

describe('module instances', () => {
  let t: TestApp;
  let git: GitServer;
  let commit: string;
  let codeSourceId: string;
  let projectId: string;
  let envId: string;
  let otherEnvId: string;
  let network: PublishedModule;
  let database: PublishedModule;
  let service: PublishedModule;

  before(async () => {
    t = await startTestApp();
    git = await startGitServer();
    commit = commitModules(git);
    codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data.id;
    envId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Production' } } })).body.data.id;
    otherEnvId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'shared', name: 'Shared' } } })).body.data.id;
    network = await publishModule(t, codeSourceId, 'network');
    database = await publishModule(t, codeSourceId, 'database');
    service = await publishModule(t, codeSourceId, 'service');
  });
  after(async () => {
    await t.close();
    await git.close();
  });

  const create = (givenId: string, version: PublishedModule, values: Record<string, unknown>, environmentId = envId) =>
    t.call('POST', '/module-instances', { body: { data: { environmentId, moduleVersionId: version.versionId, givenId, name: givenId, values } } });
  const ref = (instance: string, output: string, path?: string) => ({ $ref: { instance, output, ...(path ? { path } : {}) } });

  it('creates an instance that owns a stack pinned to the version, with its resolved inputs', async () => {
    const res = await create('net', network, { name: 'main' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const instance = res.body.data;
    assert.equal(instance.moduleType, 'aws/network');
    assert.equal(instance.version, '1.0.0');
    assert.deepEqual(instance.values, { name: 'main' });
    assert.deepEqual(instance.inputs, [
      { id: 'name', label: 'Network name', value: 'main', source: { type: 'VALUE' } },
      { id: 'cidr', label: 'CIDR block', value: '10.0.0.0/16', source: { type: 'DEFAULT' } },
    ]);
    const stack = (await t.call('GET', `/stacks/${instance.stackId}`)).body.data;
    assert.deepEqual(stack.source, { codeSourceId, ref: commit, path: 'modules/network', onPush: 'none' });
    assert.deepEqual(stack.variables, { name: 'main', cidr: '10.0.0.0/16' });
    assert.equal(stack.moduleInstanceId, instance.id);
    assert.equal(stack.environmentId, envId);
    assert.deepEqual((await t.call('GET', `/module-instances/${instance.id}`)).body.data, instance);
    const listed = await t.call('GET', `/module-instances?environmentId=${envId}&givenId=net`);
    assert.deepEqual(
      listed.body.data.map((i: { id: string }) => i.id),
      [instance.id],
    );
  });

  it("refuses direct changes to an instance's stack, naming the instance", async () => {
    const instance = (await create('net-locked', network, { name: 'locked' })).body.data;
    const patch = await t.call('PATCH', `/stacks/${instance.stackId}`, { body: { data: { variables: { name: 'other' } } } });
    assertError(patch, 409, 'Api:Stack:MANAGED_BY_MODULE_INSTANCE');
    assert.equal(patch.body.metadata.moduleInstanceId, instance.id);
    assertError(await t.call('DELETE', `/stacks/${instance.stackId}`), 409, 'Api:Stack:MANAGED_BY_MODULE_INSTANCE');
  });

  it('reports every problem of the values at once, naming each input by id and label', async () => {
    const res = await create('bad', network, { name: 'Not Valid', cidr: 42, unknown: true });
    assertError(res, 422, 'Api:ModuleInstance:INVALID_INPUTS');
    assert.deepEqual(res.body.details[0].items.sort(), [
      '/data/values/cidr (CIDR block): must be a string',
      '/data/values/name (Network name): lower-case letters, digits and -',
      '/data/values/unknown: is not an input of this schema',
    ]);
    assertError(await create('missing', network, {}), 422, 'Api:ModuleInstance:INVALID_INPUTS');
  });

  it('fills defaults from default values, nearest scope first, with provenance', async () => {
    const definition = await t.call('POST', '/default-value-definitions', {
      body: { data: { givenId: 'db_size', name: 'Database size', schema: { id: 'db_size', label: 'Size', type: 'string' } } },
    });
    assert.equal(definition.status, 201, JSON.stringify(definition.body));
    const value = await t.call('POST', '/default-values', {
      body: { data: { defaultValueDefinitionId: definition.body.data.id, parentId: envId, value: 'large' } },
    });
    assert.equal(value.status, 201, JSON.stringify(value.body));
    // A version whose size defaults to the default value.
    const dbDefinition = (await t.call('POST', '/module-definitions', { body: { data: { type: 'aws/sized-db', name: 'Sized' } } })).body.data.id;
    const version = await t.call('POST', '/module-versions', {
      body: {
        data: {
          moduleDefinitionId: dbDefinition,
          version: '1.0.0',
          source: { codeSourceId, ref: 'main', path: 'modules/database' },
          inputs: [{ id: 'size', label: 'Size', type: 'string', default: { $defaultValue: 'db_size' } }],
        },
      },
    });
    assert.equal(version.status, 201, JSON.stringify(version.body));
    const res = await create('sized', { definitionId: dbDefinition, versionId: version.body.data.id }, {});
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.inputs[0], {
      id: 'size',
      label: 'Size',
      value: 'large',
      source: { type: 'ENVIRONMENT', defaultValueDefinitionId: definition.body.data.id, parentId: envId, defaultValueId: value.body.data.id },
    });
  });

  it('takes references to other instances by givenId in the environment or by id elsewhere, and writes the producer id to the stack', async () => {
    const net = (await create('net-ref', network, { name: 'ref' })).body.data;
    const db = await create('db-ref', database, { vpc_id: ref('net-ref', 'vpc_id'), subnet: ref('net-ref', 'subnet_ids', '/0') });
    assert.equal(db.status, 201, JSON.stringify(db.body));
    assert.deepEqual(
      db.body.data.references.map((r: Record<string, unknown>) => [r.inputId, r.inputPath, r.instance, r.producerInstanceId, r.output, r.path]),
      [
        ['subnet', '/subnet', 'net-ref', net.id, 'subnet_ids', '/0'],
        ['vpc_id', '/vpc_id', 'net-ref', net.id, 'vpc_id', ''],
      ],
    );
    // Not applied yet: every reference says so.
    assert.deepEqual(
      db.body.data.references.map((r: { messages: { kind: string }[] }) => r.messages.map((m) => m.kind)),
      [['OUTPUT_NOT_APPLIED'], ['OUTPUT_NOT_APPLIED']],
    );
    const stack = (await t.call('GET', `/stacks/${db.body.data.stackId}`)).body.data;
    assert.deepEqual(stack.variables.vpc_id, { $ref: { instance: net.id, output: 'vpc_id' } });
    const elsewhere = await create('svc-elsewhere', service, { endpoint: ref(db.body.data.id, 'endpoint') }, otherEnvId);
    assert.equal(elsewhere.status, 201, JSON.stringify(elsewhere.body));
    const byGivenIdElsewhere = await create('svc-wrong', service, { endpoint: ref('db-ref', 'endpoint') }, otherEnvId);
    assertError(byGivenIdElsewhere, 422, 'Api:ModuleInstance:INVALID_INPUTS');
    assert.match(byGivenIdElsewhere.body.details[0].items[0], /^\/data\/values\/endpoint \(Database endpoint\): names no module instance "db-ref"/);
  });

  it('checks what a reference input demands: the module type, the output and the environment', async () => {
    const svc = (await create('svc-type', service, { endpoint: 'db.example.com' })).body.data;
    const wrongType = await create('db-type', database, { vpc_id: ref(svc.id, 'vpc_id') });
    assertError(wrongType, 422, 'Api:ModuleInstance:INVALID_INPUTS');
    assert.deepEqual(wrongType.body.details[0].items, ['/data/values/vpc_id (Network): must name an instance of module type "aws/network", not "aws/service"']);
    const wrongOutput = await create('db-output', database, { vpc_id: ref('net', 'subnet_ids') });
    assert.deepEqual(wrongOutput.body.details[0].items, ['/data/values/vpc_id/$ref/output (Network): must be "vpc_id"']);
    const shared = (await create('net-shared', network, { name: 'shared' }, otherEnvId)).body.data;
    const crossEnv = await create('db-cross', database, { vpc_id: ref(shared.id, 'vpc_id') });
    assert.deepEqual(crossEnv.body.details[0].items, ['/data/values/vpc_id (Network): must name an instance of the same environment']);
    const literal = await create('db-literal', database, { vpc_id: 'vpc-123' });
    assert.deepEqual(literal.body.details[0].items, ['/data/values/vpc_id (Network): must be a reference {"$ref": {"instance": ..., "output": "vpc_id"}}']);
  });

  it('refuses a reference that would close a cycle, naming it', async () => {
    const a = (await create('cycle-a', service, { endpoint: 'x' })).body.data;
    const b = (await create('cycle-b', service, { endpoint: ref('cycle-a', 'url') })).body.data;
    assert.ok(b.id);
    const c = (await create('cycle-c', service, { endpoint: ref('cycle-b', 'url') })).body.data;
    assert.ok(c.id);
    const closing = await t.call('PATCH', `/module-instances/${a.id}`, { body: { data: { values: { endpoint: ref('cycle-c', 'url') } } } });
    assertError(closing, 422, 'Api:ModuleInstance:REFERENCE_CYCLE');
    assert.equal(closing.body.message, 'These references would close a cycle: cycle-a → cycle-c → cycle-b → cycle-a');
    const self = await t.call('PATCH', `/module-instances/${a.id}`, { body: { data: { values: { endpoint: ref('cycle-a', 'url') } } } });
    assertError(self, 422, 'Api:ModuleInstance:REFERENCE_CYCLE');
  });

  it('keeps a reference to an output the producer does not declare, and reports it', async () => {
    await create('net-miss', network, { name: 'miss' });
    const svc = await create('svc-miss', service, { endpoint: ref('net-miss', 'no_such_output') });
    assert.equal(svc.status, 201, JSON.stringify(svc.body));
    assert.deepEqual(svc.body.data.references[0].messages, [
      {
        field: 'no_such_output',
        producerInstanceId: svc.body.data.references[0].producerInstanceId,
        refInputId: 'endpoint',
        refInputPath: '/endpoint',
        kind: 'MISSING_OUTPUT',
        message: 'Module instance "net-miss" declares no output "no_such_output"',
      },
    ]);
  });

  it('draws the module graph: instances, instances referenced elsewhere, an edge per reference, with messages', async () => {
    const graphEnv = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'graph', name: 'Graph' } } })).body.data.id;
    const shared = (await create('net-graph', network, { name: 'graph' }, otherEnvId)).body.data;
    const db = (await create('db-graph', database, { vpc_id: { $ref: { instance: shared.id, output: 'vpc_id' } } }, graphEnv)).body;
    // A reference input refuses another environment: reference through a plain input instead.
    assert.equal(db.code, 'Api:ModuleInstance:INVALID_INPUTS');
    const svc = (await create('svc-graph', service, { endpoint: ref(shared.id, 'subnet_ids', '/0') }, graphEnv)).body.data;
    const res = await t.call('GET', `/environments/${graphEnv}/module-graph`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { nodes, edges } = res.body.data;
    assert.deepEqual(nodes.map((n: Record<string, unknown>) => [n.givenId, n.kind, n.moduleType, n.version]).sort(), [
      ['net-graph', 'EXTERNAL_INSTANCE', 'aws/network', '1.0.0'],
      ['svc-graph', 'INSTANCE', 'aws/service', '1.0.0'],
    ]);
    assert.deepEqual(edges, [
      {
        id: `${svc.id}:/endpoint`,
        source: shared.id,
        target: svc.id,
        consumedFields: ['subnet_ids'],
        crossEnv: true,
        refInputId: 'endpoint',
        refInputPath: '/endpoint',
        messages: [
          {
            field: 'subnet_ids',
            producerInstanceId: shared.id,
            refInputId: 'endpoint',
            refInputPath: '/endpoint',
            kind: 'OUTPUT_NOT_APPLIED',
            message: 'Output "subnet_ids" of "' + shared.id + '" has not been applied yet',
          },
        ],
      },
    ]);
    assertError(await t.call('GET', `/environments/${graphEnv}/module-graph`, { headers: inOrg(await createOrganization(t, 'Graph outsider')) }), 404);
  });

  it('upgrades to another version, carrying a renamed immutable input over through moved_from', async () => {
    const instance = (await create('net-up', network, { name: 'up', cidr: '10.1.0.0/16' })).body.data;
    const v2 = await t.call('POST', '/module-versions', {
      body: {
        data: {
          moduleDefinitionId: network.definitionId,
          version: '2.0.0',
          source: { codeSourceId, ref: 'main', path: 'modules/network' },
          inputs: [
            { id: 'network_name', label: 'Network name', type: 'string', required: true, immutable: true, moved_from: ['name'] },
            { id: 'cidr', label: 'CIDR block', type: 'string' },
          ],
          outputs: [{ name: 'vpc_id' }],
        },
      },
    });
    assert.equal(v2.status, 201, JSON.stringify(v2.body));
    const upgraded = await t.call('POST', `/module-instances/${instance.id}/upgrade`, { body: { data: { moduleVersionId: v2.body.data.id } } });
    assert.equal(upgraded.status, 200, JSON.stringify(upgraded.body));
    assert.equal(upgraded.body.data.version, '2.0.0');
    assert.deepEqual(upgraded.body.data.values, { network_name: 'up', cidr: '10.1.0.0/16' });
    const other = await t.call('POST', `/module-instances/${instance.id}/upgrade`, { body: { data: { moduleVersionId: service.versionId } } });
    assertError(other, 422, 'Api:ModuleVersion:OTHER_DEFINITION');
  });

  it('refuses a deprecated version for new instances', async () => {
    const version = await t.call('POST', '/module-versions', {
      body: {
        data: { moduleDefinitionId: service.definitionId, version: '1.1.0', source: { codeSourceId, ref: 'main', path: 'modules/service' }, inputs: [] },
      },
    });
    await t.call('POST', `/module-versions/${version.body.data.id}/deprecate`, { body: { data: { message: 'broken' } } });
    const res = await create('svc-deprecated', { definitionId: service.definitionId, versionId: version.body.data.id }, {});
    assertError(res, 422, 'Api:ModuleInstance:INVALID_INPUTS');
    assert.match(res.body.message, /deprecated: broken/);
  });

  it('deletes an instance that never deployed at once, with its stack; refuses one whose outputs others consume', async () => {
    const net = (await create('net-del', network, { name: 'del' })).body.data;
    await create('db-del', database, { vpc_id: ref('net-del', 'vpc_id') });
    const refused = await t.call('DELETE', `/module-instances/${net.id}`);
    assertError(refused, 409, 'Api:ModuleInstance:IN_USE');
    assert.deepEqual(refused.body.details[0].items, ['module instances: db-del']);
    const lone = (await create('net-lone', network, { name: 'lone' })).body.data;
    assert.equal((await t.call('DELETE', `/module-instances/${lone.id}`)).status, 204);
    assertError(await t.call('GET', `/module-instances/${lone.id}`), 404, 'Api:ModuleInstance:NOT_FOUND');
    assertError(await t.call('GET', `/stacks/${lone.stackId}`), 404, 'Api:Stack:NOT_FOUND');
  });

  it('refuses to delete a definition while it has instances', async () => {
    const res = await t.call('DELETE', `/module-definitions/${network.definitionId}`);
    assertError(res, 409, 'Api:ModuleDefinition:IN_USE');
  });

  it('lets a VIEWER read instances and the graph, and not write', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assert.equal((await t.call('GET', '/module-instances', { token: viewer.token })).status, 200);
    assert.equal((await t.call('GET', `/environments/${envId}/module-graph`, { token: viewer.token })).status, 200);
    const res = await t.call('POST', '/module-instances', {
      token: viewer.token,
      body: { data: { environmentId: envId, moduleVersionId: network.versionId, givenId: 'v', name: 'v', values: { name: 'v' } } },
    });
    assertError(res, 403, 'Auth:Permission:DENIED');
  });

  it("seals the values of a sensitive input as the stack's sensitive variables: never stored, listed or shown", async () => {
    const definition = (await t.call('POST', '/module-definitions', { body: { data: { type: 'aws/secret-service', name: 'Secret service' } } })).body.data.id;
    const version = await t.call('POST', '/module-versions', {
      body: {
        data: {
          moduleDefinitionId: definition,
          version: '1.0.0',
          source: { codeSourceId, ref: 'main', path: 'modules/service' },
          inputs: [
            { id: 'endpoint', label: 'Endpoint', type: 'string' },
            { id: 'env_secrets', label: 'Secret environment', type: 'key_value', sensitive: true, required: true },
          ],
        },
      },
    });
    assert.equal(version.status, 201, JSON.stringify(version.body));
    const created = await create(
      'secretive',
      { definitionId: definition, versionId: version.body.data.id },
      { endpoint: 'x', env_secrets: { API_TOKEN: 'tok-ultra-secret-1' } },
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    const seen = [
      JSON.stringify(created.body),
      JSON.stringify((await t.call('GET', `/module-instances/${created.body.data.id}`, { token: viewer.token })).body),
      JSON.stringify((await t.call('GET', `/stacks/${created.body.data.stackId}`, { token: viewer.token })).body),
      JSON.stringify((await t.call('GET', `/module-instances?environmentId=${envId}`, { token: viewer.token })).body),
    ];
    for (const body of seen) assert.doesNotMatch(body, /tok-ultra-secret-1/);
    assert.deepEqual(created.body.data.values, { endpoint: 'x' });
    assert.equal(created.body.data.inputs[1].value, '(sensitive)');
    const names = await t.call('GET', `/stacks/${created.body.data.stackId}/sensitive-variables`);
    assert.deepEqual(
      names.body.data.map((v: { name: string }) => v.name),
      ['env_secrets'],
    );
    const patched = await t.call('PATCH', `/module-instances/${created.body.data.id}`, { body: { data: { values: { endpoint: 'y' } } } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(patched.body.data.inputs[1].value, '(sensitive)', 'left out, the sealed value stays');
    const cleared = await t.call('PATCH', `/module-instances/${created.body.data.id}`, { body: { data: { values: { endpoint: 'y', env_secrets: null } } } });
    assert.deepEqual(cleared.body.details[0].items, ['/data/values/env_secrets (Secret environment): is required']);
  });
});
