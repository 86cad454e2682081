import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { newId } from '../src/platform/ids.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';

describe('environments', () => {
  let t: TestApp;
  let projectId: string;
  before(async () => {
    t = await startTestApp();
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'app', name: 'App' } } })).body.data.id;
  });
  after(() => t.close());

  const create = (data: Record<string, unknown>, options: { token?: string; headers?: Record<string, string> } = {}) =>
    t.call('POST', '/environments', { ...options, body: { data: { projectId, name: 'Env', ...data } } });

  it('creates, reads, patches and deletes an environment', async () => {
    const created = await create({ givenId: 'dev', description: 'for developers' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const env = created.body.data;
    assert.equal(env.projectId, projectId);
    assert.equal(env.executionEnvironmentId, undefined);
    assert.deepEqual((await t.call('GET', `/environments/${env.id}`)).body.data, env);
    const patched = await t.call('PATCH', `/environments/${env.id}`, { body: { data: { name: 'Development' } } });
    assert.equal(patched.body.data.name, 'Development');
    assert.equal(patched.body.data.description, 'for developers');
    assert.equal((await t.call('DELETE', `/environments/${env.id}`)).status, 204);
    assert.equal((await t.call('GET', `/environments/${env.id}`)).status, 404);
  });

  it('givenId is unique within a project, not across projects', async () => {
    assert.equal((await create({ givenId: 'prod' })).status, 201);
    const dup = await create({ givenId: 'prod' });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.code, 'Api:Environment:ALREADY_EXISTS');
    const other = (await t.call('POST', '/projects', { body: { data: { givenId: 'other', name: 'Other' } } })).body.data.id;
    assert.equal((await create({ givenId: 'prod', projectId: other })).status, 201);
  });

  it('lists by project', async () => {
    const p = (await t.call('POST', '/projects', { body: { data: { givenId: 'listed', name: 'L' } } })).body.data.id;
    for (const g of ['a', 'b', 'c']) assert.equal((await create({ givenId: g, projectId: p })).status, 201);
    const res = await t.call('GET', `/environments?projectId=${p}`);
    assert.deepEqual(
      res.body.data.map((e: { givenId: string }) => e.givenId),
      ['a', 'b', 'c'],
    );
  });

  it('a project or execution environment of another organization is 404, like a missing one', async () => {
    const orgId = await createOrganization(t, 'Elsewhere');
    const foreignProject = (await t.call('POST', '/projects', { headers: inOrg(orgId), body: { data: { givenId: 'f', name: 'F' } } })).body.data.id;
    const res = await create({ givenId: 'x', projectId: foreignProject });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'Api:Project:NOT_FOUND');
    const foreignEe = await t.call('POST', '/execution-environments', { headers: inOrg(orgId), body: { data: { givenId: 'l', name: 'L', type: 'LOCAL' } } });
    const res2 = await create({ givenId: 'y', executionEnvironmentId: foreignEe.body.data.id });
    assert.equal(res2.status, 404);
    assert.equal(res2.body.code, 'Api:ExecutionEnvironment:NOT_FOUND');
  });

  it('attaches and detaches an execution environment', async () => {
    const ee = (await t.call('POST', '/execution-environments', { body: { data: { givenId: 'worker', name: 'Worker', type: 'LOCAL' } } })).body.data;
    const env = (await create({ givenId: 'with-ee', executionEnvironmentId: ee.id })).body.data;
    assert.equal(env.executionEnvironmentId, ee.id);
    const detached = await t.call('PATCH', `/environments/${env.id}`, { body: { data: { executionEnvironmentId: null } } });
    assert.equal(detached.status, 200);
    assert.equal(detached.body.data.executionEnvironmentId, undefined);
  });

  it('deleting an environment with stacks is 409 naming them', async () => {
    const env = (await create({ givenId: 'stacked' })).body.data;
    const pipelineId = newId();
    await sql`insert into pipelines (id, organization_id, name) values (${pipelineId}, ${env.organizationId}, 'p')`.execute(t.db);
    await sql`insert into stacks (id, organization_id, project_id, environment_id, given_id, name, change_pipeline_id, destroy_pipeline_id)
              values (${newId()}, ${env.organizationId}, ${projectId}, ${env.id}, 'network', 'Network', ${pipelineId}, ${pipelineId})`.execute(t.db);
    const res = await t.call('DELETE', `/environments/${env.id}`);
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'Api:Environment:IN_USE');
    assert.deepEqual(res.body.details[0].items, ['stacks: network']);
    assert.equal((await t.call('GET', `/environments/${env.id}`)).status, 200);
  });

  it('deleting an environment deletes the default values set on it', async () => {
    const env = (await create({ givenId: 'valued' })).body.data;
    const def = (await t.call('GET', '/default-value-definitions')).body.data.find((d: { givenId: string }) => d.givenId === 'aws_region');
    const value = await t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: def.id, parentId: env.id, value: 'eu-west-1' } } });
    assert.equal(value.status, 201, JSON.stringify(value.body));
    assert.equal((await t.call('DELETE', `/environments/${env.id}`)).status, 204);
    assert.equal((await t.call('GET', `/default-values/${value.body.data.id}`)).status, 404);
  });

  it('VIEWER cannot create environments, MEMBER can', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    const member = await serviceAccountCaller(t, 'MEMBER');
    assert.equal((await create({ givenId: 'v' }, { token: viewer.token })).status, 403);
    assert.equal((await create({ givenId: 'm' }, { token: member.token })).status, 201);
  });
});
