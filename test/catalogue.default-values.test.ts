import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';

const network = {
  id: 'network',
  label: 'Network',
  type: 'object',
  properties: [
    { id: 'cidr', label: 'CIDR', type: 'string', required: true, patterns: [{ pattern: '^\\d+\\.\\d+\\.\\d+\\.\\d+/\\d+$', message: 'must be a CIDR block' }] },
    { id: 'azs', label: 'Zones', type: 'number', integer: true, min: 1, max: 3 },
  ],
};

describe('default values and the resolver', () => {
  let t: TestApp;
  let orgId: string;
  let projectId: string;
  let envId: string;
  let otherEnvId: string;
  let networkDef: string;
  let regionDef: string;
  before(async () => {
    t = await startTestApp();
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data.id;
    envId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
    otherEnvId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'dev', name: 'Dev' } } })).body.data.id;
    networkDef = (await t.call('POST', '/default-value-definitions', { body: { data: { givenId: 'network', name: 'Network', schema: network } } })).body.data
      .id;
    const defs = await t.call('GET', '/default-value-definitions?limit=200');
    regionDef = defs.body.data.find((d: { givenId: string }) => d.givenId === 'aws_region').id;
  });
  after(() => t.close());

  const setValue = (defaultValueDefinitionId: string, parentId: string, value: unknown, headers?: Record<string, string>) =>
    t.call('POST', '/default-values', { headers, body: { data: { defaultValueDefinitionId, parentId, value } } });

  it('sets a value on the organization, a project and an environment, each with its parentType', async () => {
    const cases = [
      [orgId, 'ORGANIZATION', 'us-east-1'],
      [projectId, 'PROJECT', 'eu-west-1'],
      [envId, 'ENVIRONMENT', 'eu-central-1'],
    ] as const;
    for (const [parentId, parentType, value] of cases) {
      const res = await setValue(regionDef, parentId, value);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.deepEqual(
        { parentId: res.body.data.parentId, parentType: res.body.data.parentType, value: res.body.data.value, organizationId: res.body.data.organizationId },
        { parentId, parentType, value, organizationId: orgId },
      );
      assert.deepEqual((await t.call('GET', `/default-values/${res.body.data.id}`)).body.data, res.body.data);
    }
  });

  it('one value per definition and parent: a second is 409', async () => {
    const res = await setValue(regionDef, orgId, 'us-west-2');
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'Api:DefaultValue:ALREADY_EXISTS');
  });

  it('a value the schema refuses is 422 listing every problem with its path', async () => {
    const res = await setValue(networkDef, projectId, { cidr: '10.0.0.0', azs: 7, extra: true });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'Api:DefaultValue:INVALID_VALUE');
    assert.deepEqual(res.body.details[0].items, [
      '/data/value/extra: is not an input of this schema',
      '/data/value/cidr: must be a CIDR block',
      '/data/value/azs: must be at most 3',
    ]);
    const nullValue = await setValue(networkDef, projectId, null);
    assert.equal(nullValue.status, 422);
    const dropdown = await setValue(regionDef, otherEnvId, 'mars-north-1');
    assert.equal(dropdown.status, 422);
  });

  it('a parent or definition of another organization is 404, like a missing one', async () => {
    const other = await createOrganization(t, 'Other');
    const foreignProject = (await t.call('POST', '/projects', { headers: inOrg(other), body: { data: { givenId: 'x', name: 'X' } } })).body.data.id;
    const parent = await setValue(regionDef, foreignProject, 'eu-west-1');
    assert.equal(parent.status, 404);
    assert.equal(parent.body.code, 'Api:Parent:NOT_FOUND');
    assert.equal((await setValue(regionDef, other, 'eu-west-1')).status, 404, 'another organization as parent');
    const foreignDef = (await t.call('GET', '/default-value-definitions', { headers: inOrg(other) })).body.data[0].id;
    const def = await setValue(foreignDef, orgId, 'eu-west-1');
    assert.equal(def.status, 404);
    assert.equal(def.body.code, 'Api:DefaultValueDefinition:NOT_FOUND');
  });

  it('updates a value (validated) and deletes it', async () => {
    const created = (await setValue(networkDef, otherEnvId, { cidr: '10.1.0.0/16' })).body.data;
    const bad = await t.call('PATCH', `/default-values/${created.id}`, { body: { data: { value: { cidr: 'nope' } } } });
    assert.equal(bad.status, 422);
    const good = await t.call('PATCH', `/default-values/${created.id}`, { body: { data: { value: { cidr: '10.2.0.0/16', azs: 2 } } } });
    assert.equal(good.status, 200);
    assert.deepEqual(good.body.data.value, { cidr: '10.2.0.0/16', azs: 2 });
    const moved = await t.call('PATCH', `/default-values/${created.id}`, { body: { data: { parentId: orgId } } });
    assert.equal(moved.status, 400, 'the parent is fixed');
    assert.equal((await t.call('DELETE', `/default-values/${created.id}`)).status, 204);
    assert.equal((await t.call('GET', `/default-values/${created.id}`)).status, 404);
  });

  it('lists by definition and by parent', async () => {
    const byDef = await t.call('GET', `/default-values?defaultValueDefinitionId=${regionDef}`);
    assert.deepEqual(
      byDef.body.data.map((v: { parentType: string }) => v.parentType),
      ['ORGANIZATION', 'PROJECT', 'ENVIRONMENT'],
    );
    const byParent = await t.call('GET', `/default-values?parentId=${projectId}`);
    assert.ok(byParent.body.data.length >= 1);
    assert.ok(byParent.body.data.every((v: { parentId: string }) => v.parentId === projectId));
  });

  it('the resolver picks the environment, then the project, then the organization, and says where from', async () => {
    const region = async (env: string) => (await t.call('GET', `/environments/${env}/resolved-default-values?givenId=aws_region`)).body.data[0];
    const prod = await region(envId);
    assert.equal(prod.value, 'eu-central-1');
    assert.equal(prod.source.type, 'ENVIRONMENT');
    assert.equal(prod.source.parentId, envId);
    const dev = await region(otherEnvId);
    assert.deepEqual([dev.value, dev.source.type, dev.source.parentId], ['eu-west-1', 'PROJECT', projectId]);

    const project = (await t.call('POST', '/projects', { body: { data: { givenId: 'bare', name: 'Bare' } } })).body.data.id;
    const bare = (await t.call('POST', '/environments', { body: { data: { projectId: project, givenId: 'e', name: 'E' } } })).body.data.id;
    const fromOrg = await region(bare);
    assert.deepEqual([fromOrg.value, fromOrg.source.type, fromOrg.source.parentId], ['us-east-1', 'ORGANIZATION', orgId]);
  });

  it('without any value the resolver falls back to the schema default, following a $defaultValue reference', async () => {
    const literal = await t.call('POST', '/default-value-definitions', {
      body: { data: { givenId: 'tier', name: 'Tier', schema: { id: 'tier', label: 'Tier', type: 'string', default: 'standard' } } },
    });
    assert.equal(literal.status, 201);
    const ref = await t.call('POST', '/default-value-definitions', {
      body: {
        data: { givenId: 'deploy_region', name: 'Deploy region', schema: { id: 'r', label: 'R', type: 'string', default: { $defaultValue: 'aws_region' } } },
      },
    });
    assert.equal(ref.status, 201, JSON.stringify(ref.body));
    const all = await t.call('GET', `/environments/${envId}/resolved-default-values`);
    const byGivenId = Object.fromEntries(all.body.data.map((r: { givenId: string }) => [r.givenId, r]));
    assert.deepEqual([byGivenId.tier.value, byGivenId.tier.source], ['standard', { type: 'DEFINITION' }]);
    assert.deepEqual([byGivenId.deploy_region.value, byGivenId.deploy_region.source.type], ['eu-central-1', 'ENVIRONMENT']);
    assert.equal(byGivenId.network, undefined, 'a definition with no value and no default is left out');
  });

  it("resolving for another organization's environment is 404; VIEWER may resolve but not write", async () => {
    const other = await createOrganization(t, 'Hidden');
    const outsider = await serviceAccountCaller(t, 'OWNER', other);
    const res = await t.call('GET', `/environments/${envId}/resolved-default-values`, { token: outsider.token });
    assert.equal(res.status, 404);
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assert.equal((await t.call('GET', `/environments/${envId}/resolved-default-values`, { token: viewer.token })).status, 200);
    const write = await t.call('POST', '/default-values', {
      token: viewer.token,
      body: { data: { defaultValueDefinitionId: networkDef, parentId: orgId, value: { cidr: '10.0.0.0/8' } } },
    });
    assert.equal(write.status, 403);
  });
});
