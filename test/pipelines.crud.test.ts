import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, type ServiceAccountCaller } from './helpers/callers.ts';
import { createPipeline, insertProject, PLAN_APPROVE_APPLY } from './pipelines.fixtures.ts';

describe('pipelines: create, read, list, change', () => {
  let t: TestApp;
  let member: ServiceAccountCaller;
  let viewer: ServiceAccountCaller;
  let foreignOrgId: string;
  let foreignPipelineId: string;
  before(async () => {
    t = await startTestApp();
    member = await serviceAccountCaller(t, 'MEMBER');
    viewer = await serviceAccountCaller(t, 'VIEWER');
    foreignOrgId = await createOrganization(t, 'Foreign');
    foreignPipelineId = (await createPipeline(t, {}, inOrg(foreignOrgId))).id;
  });
  after(() => t.close());

  it('POST /pipelines creates the pipeline (201) and its version 1 from the config', async () => {
    const res = await t.call('POST', '/pipelines', {
      token: member.token,
      body: { data: { name: 'Deploy', givenId: 'deploy', description: 'plan, approve, apply', config: PLAN_APPROVE_APPLY } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const pipeline = res.body.data;
    assert.equal(pipeline.name, 'Deploy');
    assert.equal(pipeline.givenId, 'deploy');
    assert.equal(pipeline.description, 'plan, approve, apply');
    assert.equal(pipeline.latestVersion, 1);
    assert.equal(pipeline.createdById, member.serviceAccountId);
    assert.match(pipeline.createdAt, /Z$/);
    assert.equal(pipeline.projectId, undefined);

    const version = await t.call('GET', `/pipeline-versions/${pipeline.latestVersionId}`, { token: viewer.token });
    assert.equal(version.status, 200);
    assert.equal(version.body.data.version, 1);
    assert.equal(version.body.data.pipelineId, pipeline.id);
    assert.deepEqual(version.body.data.config, PLAN_APPROVE_APPLY);
    assert.deepEqual((await t.call('GET', `/pipelines/${pipeline.id}`, { token: viewer.token })).body.data, pipeline);
  });

  it("a pipeline may belong to a project of the organization; another org's project is 404", async () => {
    const orgId = (await t.call('GET', '/auth/whoami', { token: member.token })).body.data.organizationId;
    const projectId = await insertProject(t, orgId);
    const res = await t.call('POST', '/pipelines', { token: member.token, body: { data: { name: 'In project', projectId, config: PLAN_APPROVE_APPLY } } });
    assert.equal(res.status, 201);
    assert.equal(res.body.data.projectId, projectId);

    const foreignProject = await insertProject(t, foreignOrgId);
    const refused = await t.call('POST', '/pipelines', {
      token: member.token,
      body: { data: { name: 'x', projectId: foreignProject, config: PLAN_APPROVE_APPLY } },
    });
    assertError(refused, 404, 'Api:Project:NOT_FOUND');

    const listed = await t.call('GET', `/pipelines?projectId=${projectId}`, { token: viewer.token });
    assert.deepEqual(
      listed.body.data.map((p: { id: string }) => p.id),
      [res.body.data.id],
    );
    assertError(await t.call('GET', `/pipelines?projectId=${foreignProject}`, { token: viewer.token }), 404, 'Api:Project:NOT_FOUND');
  });

  it('a second pipeline with the same givenId is 409; another organization may reuse it', async () => {
    await createPipeline(t, { givenId: 'twice' });
    assertError(
      await t.call('POST', '/pipelines', { body: { data: { name: 'again', givenId: 'twice', config: PLAN_APPROVE_APPLY } } }),
      409,
      'Api:Pipeline:ALREADY_EXISTS',
    );
    await createPipeline(t, { givenId: 'twice' }, inOrg(foreignOrgId));
  });

  it("GET /pipelines pages through the organization's pipelines only, in creation order", async () => {
    const created = [];
    for (let i = 0; i < 3; i++) created.push((await createPipeline(t, { name: `paged ${i}` })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await t.call('GET', `/pipelines?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: viewer.token });
      assert.equal(res.status, 200);
      assert.equal(res.body.meta.limit, 2);
      assert.ok(res.body.data.length <= 2);
      seen.push(...res.body.data.map((p: { id: string }) => p.id));
      cursor = res.body.meta.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, [...seen].sort());
    for (const id of created) assert.ok(seen.includes(id));
    assert.ok(!seen.includes(foreignPipelineId));
  });

  it('PATCH /pipelines/{id} changes name and description only', async () => {
    const pipeline = await createPipeline(t, { description: 'old' });
    const res = await t.call('PATCH', `/pipelines/${pipeline.id}`, { token: member.token, body: { data: { name: 'Renamed' } } });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.name, 'Renamed');
    assert.equal(res.body.data.description, 'old');
    const cleared = await t.call('PATCH', `/pipelines/${pipeline.id}`, { token: member.token, body: { data: { description: null } } });
    assert.equal(cleared.body.data.description, undefined);
    assert.equal(cleared.body.data.latestVersion, 1);
    const untouched = await t.call('PATCH', `/pipelines/${pipeline.id}`, { token: member.token, body: { data: {} } });
    assert.deepEqual(untouched.body.data, cleared.body.data);
    assertError(await t.call('PATCH', `/pipelines/${pipeline.id}`, { body: { data: { latestVersion: 5 } } }), 400);
    assertError(await t.call('PATCH', `/pipelines/${pipeline.id}`, { body: { data: { config: PLAN_APPROVE_APPLY } } }), 400);
  });

  it('an invalid config is 422 listing every problem with its path', async () => {
    const res = await t.call('POST', '/pipelines', {
      body: {
        data: {
          name: 'Broken',
          config: {
            steps: [
              { id: 'a', name: 'A', type: 'script', needs: ['b'] },
              { id: 'b', name: 'B', type: 'teleport', needs: ['a', 'ghost'] },
              { id: 'a', name: 'Again', type: 'approval', retry: { maxAttempts: 0 } },
            ],
          },
        },
      },
    });
    assertError(res, 422, 'Api:PipelineConfig:INVALID');
    assert.deepEqual(res.body.details[0].items, [
      'config/steps/0/with/command: is required',
      'config/steps/1/needs/1: unknown step "ghost"',
      'config/steps/1/type: unknown step type "teleport" (known: approval, script, opentofu.plan, opentofu.apply, opentofu.destroy, module.deploy)',
      'config/steps/2/id: duplicate step id "a" (first used by config/steps/0)',
      'config/steps/2/retry/maxAttempts: must be an integer from 1 to 10',
      'config/steps: cycle in needs: "a" → "b" → "a"',
    ]);
    const list = await t.call('GET', '/pipelines?limit=200');
    assert.ok(!list.body.data.some((p: { name: string }) => p.name === 'Broken'));
  });

  it('malformed bodies are 400: missing name, unknown and read-only fields, a config that is not an object, a bad givenId', async () => {
    for (const data of [
      { config: PLAN_APPROVE_APPLY },
      { name: 'x' },
      { name: 'x', config: PLAN_APPROVE_APPLY, latestVersion: 3 },
      { name: 'x', config: PLAN_APPROVE_APPLY, id: 'mine' },
      { name: 'x', config: [PLAN_APPROVE_APPLY] },
      { name: 'x', config: 'steps' },
      { name: 'x', givenId: '-bad', config: PLAN_APPROVE_APPLY },
      { name: '', config: PLAN_APPROVE_APPLY },
    ]) {
      assertError(await t.call('POST', '/pipelines', { token: member.token, body: { data } }), 400, 'Api:Request:INVALID');
    }
    assertError(await t.call('POST', '/pipelines', { token: member.token, rawBody: '{"data": {' }), 400);
  });

  it('a VIEWER may read but not create or change pipelines (403)', async () => {
    const pipeline = await createPipeline(t);
    assertError(
      await t.call('POST', '/pipelines', { token: viewer.token, body: { data: { name: 'x', config: PLAN_APPROVE_APPLY } } }),
      403,
      'Auth:Permission:DENIED',
    );
    assertError(await t.call('PATCH', `/pipelines/${pipeline.id}`, { token: viewer.token, body: { data: { name: 'x' } } }), 403);
    assert.equal((await t.call('GET', `/pipelines/${pipeline.id}`, { token: viewer.token })).status, 200);
  });

  it('without a valid credential every pipeline route is 401', async () => {
    assertError(await t.call('GET', '/pipelines', { token: null }), 401);
    assertError(await t.call('GET', `/pipelines/${foreignPipelineId}`, { token: null }), 401);
    assertError(await t.call('POST', '/pipelines', { token: null, body: { data: { name: 'x', config: PLAN_APPROVE_APPLY } } }), 401);
    assertError(await t.call('PATCH', `/pipelines/${foreignPipelineId}`, { token: 'plk_nope', body: { data: { name: 'x' } } }), 401);
    assertError(await t.call('DELETE', `/pipelines/${foreignPipelineId}`, { token: 'plk_nope' }), 401);
  });

  it("another organization's pipeline is 404 to read, change or delete", async () => {
    assertError(await t.call('GET', `/pipelines/${foreignPipelineId}`, { token: member.token }), 404, 'Api:Pipeline:NOT_FOUND');
    assertError(
      await t.call('PATCH', `/pipelines/${foreignPipelineId}`, { token: member.token, body: { data: { name: 'x' } } }),
      404,
      'Api:Pipeline:NOT_FOUND',
    );
    assertError(await t.call('DELETE', `/pipelines/${foreignPipelineId}`, { token: member.token }), 404, 'Api:Pipeline:NOT_FOUND');
    assert.equal((await t.call('GET', `/pipelines/${foreignPipelineId}`, { headers: inOrg(foreignOrgId) })).status, 200);
  });
});
