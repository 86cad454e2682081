import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { newId } from '../src/platform/ids.ts';
import { lockWaiters } from './helpers/database.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, serviceAccountCaller, type ServiceAccountCaller } from './helpers/callers.ts';
import { createPipeline, insertRun, insertStackUsing, PLAN_APPROVE_APPLY } from './pipelines.fixtures.ts';

async function countRows(t: TestApp, table: 'pipeline_versions' | 'pipeline_runs', pipelineId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where pipeline_id = ${pipelineId}`.execute(t.db);
  return rows[0].n;
}

describe('DELETE /pipelines/{id}', () => {
  let t: TestApp;
  let member: ServiceAccountCaller;
  let viewer: ServiceAccountCaller;
  before(async () => {
    t = await startTestApp();
    member = await serviceAccountCaller(t, 'MEMBER');
    viewer = await serviceAccountCaller(t, 'VIEWER');
  });
  after(() => t.close());

  it('deletes the pipeline (204) with its versions and finished runs; then it is 404', async () => {
    const pipeline = await createPipeline(t);
    await t.call('POST', '/pipeline-versions', { body: { data: { pipelineId: pipeline.id, config: PLAN_APPROVE_APPLY } } });
    for (const status of ['SUCCEEDED', 'FAILED', 'CANCELLED']) await insertRun(t, pipeline, status);

    const res = await t.call('DELETE', `/pipelines/${pipeline.id}`, { token: member.token });
    assert.equal(res.status, 204);
    assert.equal(res.body, undefined);
    assertError(await t.call('GET', `/pipelines/${pipeline.id}`), 404, 'Api:Pipeline:NOT_FOUND');
    assertError(await t.call('GET', `/pipeline-versions/${pipeline.latestVersionId}`), 404, 'Api:PipelineVersion:NOT_FOUND');
    assertError(await t.call('DELETE', `/pipelines/${pipeline.id}`, { token: member.token }), 404);
    assert.equal(await countRows(t, 'pipeline_versions', pipeline.id), 0);
    assert.equal(await countRows(t, 'pipeline_runs', pipeline.id), 0);
  });

  it('is 409 while a stack uses the pipeline, and deletes nothing', async () => {
    const pipeline = await createPipeline(t);
    const stackId = await insertStackUsing(t, pipeline.organizationId, pipeline.id);
    const res = await t.call('DELETE', `/pipelines/${pipeline.id}`, { token: member.token });
    assertError(res, 409, 'Api:Pipeline:IN_USE');
    assert.match(res.body.message, new RegExp(stackId));
    assert.equal((await t.call('GET', `/pipelines/${pipeline.id}`)).status, 200);
  });

  for (const status of ['QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL']) {
    it(`is 409 while a run of the pipeline is ${status}`, async () => {
      const pipeline = await createPipeline(t);
      const runId = await insertRun(t, pipeline, status);
      const res = await t.call('DELETE', `/pipelines/${pipeline.id}`, { token: member.token });
      assertError(res, 409, 'Api:Pipeline:RUN_ACTIVE');
      assert.match(res.body.message, new RegExp(runId));
      assert.equal(await countRows(t, 'pipeline_runs', pipeline.id), 1);
    });
  }

  it('a run inserted while the delete waits for the pipeline lock makes the delete 409, not an orphan', async () => {
    const pipeline = await createPipeline(t);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let runId = '';
    let inserted!: () => void;
    const runInserted = new Promise<void>((resolve) => (inserted = resolve));
    // The run's foreign key holds a key-share lock on the pipeline row until this transaction commits.
    const writer = t.db.transaction().execute(async (trx) => {
      runId = newId();
      await sql`insert into pipeline_runs (id, organization_id, pipeline_id, pipeline_version_id, status)
                values (${runId}, ${pipeline.organizationId}, ${pipeline.id}, ${pipeline.latestVersionId}, 'QUEUED')`.execute(trx);
      inserted();
      await gate;
    });
    await runInserted;
    let settled = false;
    const deletion = t.call('DELETE', `/pipelines/${pipeline.id}`, { token: member.token }).finally(() => (settled = true));
    await lockWaiters(t.db);
    assert.equal(settled, false, 'the delete must wait for the uncommitted run');
    release();
    await writer;
    const res = await deletion;
    assertError(res, 409, 'Api:Pipeline:RUN_ACTIVE');
    assert.match(res.body.message, new RegExp(runId));
  });

  it('a VIEWER may not delete a pipeline (403)', async () => {
    const pipeline = await createPipeline(t);
    assertError(await t.call('DELETE', `/pipelines/${pipeline.id}`, { token: viewer.token }), 403, 'Auth:Permission:DENIED');
    assert.equal((await t.call('GET', `/pipelines/${pipeline.id}`)).status, 200);
  });
});
