import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, type ServiceAccountCaller } from './helpers/callers.ts';
import { createPipeline, PLAN_APPROVE_APPLY } from './pipelines.fixtures.ts';

/** PLAN_APPROVE_APPLY with apply's retry raised, plan given a timeout, and a notify step added first. */
const CHANGED = {
  steps: [
    { id: 'notify', name: 'Notify', type: 'script', with: { command: 'echo start' } },
    { id: 'plan', name: 'Plan', type: 'script', with: { command: 'echo plan' }, timeoutSeconds: 600 },
    { id: 'approve', name: 'Approve', type: 'approval', needs: ['plan'] },
    { id: 'apply', name: 'Apply', type: 'script', needs: ['approve'], with: { command: 'echo apply' }, retry: { maxAttempts: 3 } },
  ],
};

describe('pipeline versions', () => {
  let t: TestApp;
  let member: ServiceAccountCaller;
  let viewer: ServiceAccountCaller;
  let foreignOrgId: string;
  before(async () => {
    t = await startTestApp();
    member = await serviceAccountCaller(t, 'MEMBER');
    viewer = await serviceAccountCaller(t, 'VIEWER');
    foreignOrgId = await createOrganization(t, 'Foreign');
  });
  after(() => t.close());

  it('POST /pipeline-versions creates the next version (201) and the pipeline points at it', async () => {
    const pipeline = await createPipeline(t);
    const res = await t.call('POST', '/pipeline-versions', { token: member.token, body: { data: { pipelineId: pipeline.id, config: CHANGED } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const version = res.body.data;
    assert.equal(version.version, 2);
    assert.equal(version.pipelineId, pipeline.id);
    assert.equal(version.organizationId, pipeline.organizationId);
    assert.equal(version.createdById, member.serviceAccountId);
    assert.deepEqual(version.config, CHANGED);
    assert.match(version.createdAt, /Z$/);
    assert.match(version.updatedAt, /Z$/);

    const after = (await t.call('GET', `/pipelines/${pipeline.id}`)).body.data;
    assert.equal(after.latestVersion, 2);
    assert.equal(after.latestVersionId, version.id);
    assert.deepEqual((await t.call('GET', `/pipeline-versions/${version.id}`, { token: viewer.token })).body.data, version);
  });

  it('dryRun returns the patch against the latest version (200) and creates nothing', async () => {
    const pipeline = await createPipeline(t);
    const res = await t.call('POST', '/pipeline-versions', { token: member.token, body: { data: { pipelineId: pipeline.id, config: CHANGED, dryRun: true } } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data, {
      pipelineId: pipeline.id,
      baseVersion: 1,
      baseVersionId: pipeline.latestVersionId,
      patch: [
        { path: '/steps/0', pathLabel: 'Step "Notify"', value: CHANGED.steps[0] },
        { path: '/steps/1/timeoutSeconds', pathLabel: 'Step "Plan" › Timeout (seconds)', value: 600 },
        { path: '/steps/3/retry/maxAttempts', pathLabel: 'Step "Apply" › Retry › Max attempts', fromValue: 2, value: 3 },
      ],
    });
    const versions = await t.call('GET', `/pipeline-versions?pipelineId=${pipeline.id}`);
    assert.equal(versions.body.data.length, 1);
    assert.equal((await t.call('GET', `/pipelines/${pipeline.id}`)).body.data.latestVersion, 1);
  });

  it('a dry run of an identical config returns an empty patch', async () => {
    const pipeline = await createPipeline(t);
    const res = await t.call('POST', '/pipeline-versions', { body: { data: { pipelineId: pipeline.id, config: PLAN_APPROVE_APPLY, dryRun: true } } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.patch, []);
  });

  it('an invalid config is 422 with every problem listed, with or without dryRun, and creates nothing', async () => {
    const pipeline = await createPipeline(t);
    const config = {
      steps: [
        { id: 'build', name: 'Build', type: 'script', with: { command: '' }, timeoutSeconds: 100000 },
        { id: 'deploy', name: 'Deploy', type: 'module.deploy', needs: ['deploy'], extra: true },
      ],
    };
    for (const dryRun of [true, false]) {
      const res = await t.call('POST', '/pipeline-versions', { token: member.token, body: { data: { pipelineId: pipeline.id, config, dryRun } } });
      assertError(res, 422, 'Api:PipelineConfig:INVALID');
      assert.deepEqual(res.body.details[0].items, [
        'config/steps/0/timeoutSeconds: must be an integer from 1 to 86400',
        'config/steps/0/with/command: must be a non-empty string',
        'config/steps/1/extra: unknown field (allowed: id, name, type, needs, with, retry, timeoutSeconds)',
        'config/steps/1/needs/0: a step cannot need itself ("deploy")',
        'config/steps/1/with/moduleInstanceId: is required',
      ]);
    }
    assert.equal((await t.call('GET', `/pipeline-versions?pipelineId=${pipeline.id}`)).body.data.length, 1);
  });

  it('concurrent creations get distinct, consecutive version numbers', async () => {
    const pipeline = await createPipeline(t);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => t.call('POST', '/pipeline-versions', { body: { data: { pipelineId: pipeline.id, config: CHANGED } } })),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array(8).fill(201),
    );
    const numbers = results.map((r) => r.body.data.version).sort((a: number, b: number) => a - b);
    assert.deepEqual(numbers, [2, 3, 4, 5, 6, 7, 8, 9]);
    const latest = (await t.call('GET', `/pipelines/${pipeline.id}`)).body.data;
    assert.equal(latest.latestVersion, 9);
    assert.equal(latest.latestVersionId, results.find((r) => r.body.data.version === 9)!.body.data.id);
  });

  it("GET /pipeline-versions lists a pipeline's versions oldest first, page by page", async () => {
    const pipeline = await createPipeline(t);
    for (let i = 0; i < 4; i++) await t.call('POST', '/pipeline-versions', { body: { data: { pipelineId: pipeline.id, config: CHANGED } } });
    const numbers: number[] = [];
    let cursor: string | undefined;
    do {
      const res = await t.call('GET', `/pipeline-versions?pipelineId=${pipeline.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: viewer.token });
      assert.equal(res.status, 200);
      numbers.push(...res.body.data.map((v: { version: number }) => v.version));
      cursor = res.body.meta.nextCursor;
    } while (cursor);
    assert.deepEqual(numbers, [1, 2, 3, 4, 5]);
  });

  it('malformed bodies are 400', async () => {
    const pipeline = await createPipeline(t);
    for (const data of [
      { config: CHANGED },
      { pipelineId: pipeline.id },
      { pipelineId: pipeline.id, config: CHANGED, dryRun: 'yes' },
      { pipelineId: pipeline.id, config: CHANGED, version: 7 },
      { pipelineId: pipeline.id, config: 'steps: []' },
    ]) {
      assertError(await t.call('POST', '/pipeline-versions', { body: { data } }), 400, 'Api:Request:INVALID');
    }
    assertError(await t.call('POST', '/pipeline-versions', { body: { pipelineId: pipeline.id, config: CHANGED } }), 400);
    assertError(await t.call('GET', `/pipeline-versions?pipelineId=${pipeline.id}&limit=0`), 400);
  });

  it('a VIEWER may list and read versions but not create them, not even as a dry run (403)', async () => {
    const pipeline = await createPipeline(t);
    for (const dryRun of [true, false]) {
      const res = await t.call('POST', '/pipeline-versions', { token: viewer.token, body: { data: { pipelineId: pipeline.id, config: CHANGED, dryRun } } });
      assertError(res, 403, 'Auth:Permission:DENIED');
    }
    assert.equal((await t.call('GET', `/pipeline-versions/${pipeline.latestVersionId}`, { token: viewer.token })).status, 200);
  });

  it('without a valid credential the version routes are 401', async () => {
    const pipeline = await createPipeline(t);
    assertError(await t.call('POST', '/pipeline-versions', { token: null, body: { data: { pipelineId: pipeline.id, config: CHANGED } } }), 401);
    assertError(await t.call('GET', '/pipeline-versions', { token: null }), 401);
    assertError(await t.call('GET', `/pipeline-versions/${pipeline.latestVersionId}`, { token: 'plk_nope' }), 401);
  });

  it("another organization's pipeline and versions are 404", async () => {
    const foreign = await createPipeline(t, {}, inOrg(foreignOrgId));
    for (const dryRun of [true, false]) {
      const res = await t.call('POST', '/pipeline-versions', { token: member.token, body: { data: { pipelineId: foreign.id, config: CHANGED, dryRun } } });
      assertError(res, 404, 'Api:Pipeline:NOT_FOUND');
    }
    assertError(await t.call('GET', `/pipeline-versions/${foreign.latestVersionId}`, { token: member.token }), 404, 'Api:PipelineVersion:NOT_FOUND');
    assertError(await t.call('GET', `/pipeline-versions?pipelineId=${foreign.id}`, { token: member.token }), 404, 'Api:Pipeline:NOT_FOUND');
    const mine = await t.call('GET', '/pipeline-versions?limit=200', { token: member.token });
    assert.ok(!mine.body.data.some((v: { id: string }) => v.id === foreign.latestVersionId));
  });
});
