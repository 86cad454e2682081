import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { lockWaiters } from './helpers/database.ts';
import { createStack, getRun, startEngineTestApp, stepsOf, triggerRun, waitForRunStatus, waitForStep, type EngineTestApp } from './helpers/engine.ts';

describe('the stack queue', () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
  });
  after(() => t.close());

  it('runs one run of a stack at a time, in the order triggered, with queueState explaining the wait', async () => {
    const stack = await createStack(t, [
      { id: 'approve', type: 'approval' },
      { id: 'work', needs: ['approve'] },
    ]);
    const first = await triggerRun(t, stack.id);
    const second = await triggerRun(t, stack.id);
    const third = await triggerRun(t, stack.id);
    assert.equal(first.queueReason, 'WAITING_FOR_APPROVAL', 'an approval needs no worker: the run pauses at once');
    for (const waiting of [second, third]) {
      assert.equal(waiting.status, 'QUEUED');
      assert.equal(waiting.queueReason, 'WAITING_FOR_STACK');
      assert.equal(waiting.queueState.blockingEntityType, 'STACK');
      assert.equal(waiting.queueState.blockingEntityId, stack.id);
      assert.equal(waiting.queueState.preflightBlockedByAdmissionCondition, true);
      assert.match(waiting.queueState.reason, new RegExp(first.id));
      assert.equal(waiting.queueState.environmentId, (await t.call('GET', `/stacks/${stack.id}`)).body.data.environmentId);
    }
    const gate1 = await waitForStep(t, first.id, 'approve', 'WAITING_FOR_APPROVAL');
    assert.deepEqual(await stepsOf(t, second.id), [], 'the second run starts nothing while the first holds the stack');

    await t.call('POST', `/pipeline-step-executions/${gate1.id}/approve`);
    await waitForRunStatus(t, first.id, 'SUCCEEDED');
    const gate2 = await waitForStep(t, second.id, 'approve', 'WAITING_FOR_APPROVAL');
    const thirdNow = await getRun(t, third.id);
    assert.equal(thirdNow.queueReason, 'WAITING_FOR_STACK');
    assert.match(thirdNow.queueState.reason, new RegExp(second.id));

    await t.call('POST', `/pipeline-step-executions/${gate2.id}/approve`);
    await waitForRunStatus(t, second.id, 'SUCCEEDED');
    const gate3 = await waitForStep(t, third.id, 'approve', 'WAITING_FOR_APPROVAL');
    await t.call('POST', `/pipeline-step-executions/${gate3.id}/approve`);
    const done = await waitForRunStatus(t, third.id, 'SUCCEEDED');
    assert.equal(done.queueReason, 'FINISHED');
  });

  it('runs of different stacks do not wait for each other', async () => {
    const a = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const b = await createStack(t, [{ id: 'work' }]);
    await triggerRun(t, a.id);
    const runB = await triggerRun(t, b.id);
    await waitForRunStatus(t, runB.id, 'SUCCEEDED');
  });

  it('a stack with a run that is not finished cannot be deleted (409); once it is, it can', async () => {
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    const res = await t.call('DELETE', `/stacks/${stack.id}`);
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'Api:Stack:BUSY');
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
    assert.equal((await t.call('DELETE', `/stacks/${stack.id}`)).status, 204);
    assert.equal((await t.call('GET', `/stacks/${stack.id}`)).status, 404);
    assert.equal((await t.call('GET', `/pipelines/${stack.changePipelineId}`)).status, 404, 'its pipelines go with it');
  });

  it('lists runs filtered by stack, pipeline, environment, who started them and status', async () => {
    const stack = await createStack(t, [{ id: 'work' }]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const other = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const otherRun = await triggerRun(t, other.id);
    const byStack = await t.call('GET', `/pipeline-runs?stackId=${stack.id}`);
    assert.deepEqual(
      byStack.body.data.map((r: any) => r.id),
      [run.id],
    );
    const byPipeline = await t.call('GET', `/pipeline-runs?pipelineId=${other.changePipelineId}`);
    assert.deepEqual(
      byPipeline.body.data.map((r: any) => r.id),
      [otherRun.id],
    );
    const succeeded = await t.call('GET', `/pipeline-runs?status=SUCCEEDED&limit=200`);
    assert.ok(succeeded.body.data.some((r: any) => r.id === run.id));
    assert.ok(!succeeded.body.data.some((r: any) => r.id === otherRun.id));
    assert.equal((await t.call('GET', '/pipeline-runs?status=NOPE')).status, 400);

    const stackOf = async (id: string) => (await t.call('GET', `/stacks/${id}`)).body.data;
    const byEnvironment = await t.call('GET', `/pipeline-runs?environmentId=${(await stackOf(stack.id)).environmentId}`);
    assert.deepEqual(
      byEnvironment.body.data.map((r: any) => r.id),
      [run.id],
    );
    const admin = (await t.call('GET', '/auth/whoami')).body.data.userId;
    const mine = await t.call('GET', `/pipeline-runs?createdById=${admin}&limit=200`);
    assert.ok(mine.body.data.some((r: any) => r.id === run.id) && mine.body.data.some((r: any) => r.id === otherRun.id));
    assert.deepEqual((await t.call('GET', '/pipeline-runs?createdById=0196a3c2e8a17b2c8d9e0f1a2b3c4d5e')).body.data, []);
  });
});

describe('the trigger response', () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp(); // No worker: every run stays as its trigger left it.
  });
  after(() => t.close());

  it('is the run exactly as a read right after shows it: admitted, waiting for the stack, or paused at an approval', async () => {
    const work = await createStack(t, [{ id: 'a' }, { id: 'b', needs: ['a'] }]);
    const gated = await createStack(t, [
      { id: 'approve', type: 'approval' },
      { id: 'work', needs: ['approve'] },
    ]);
    const admitted = await triggerRun(t, work.id);
    const waiting = await triggerRun(t, work.id, { description: 'second', autoapprove: true });
    const paused = await triggerRun(t, gated.id);
    assert.deepEqual([admitted.queueReason, waiting.queueReason, paused.queueReason], ['WAITING_FOR_WORKER', 'WAITING_FOR_STACK', 'WAITING_FOR_APPROVAL']);
    for (const triggered of [admitted, waiting, paused]) assert.deepEqual(triggered, await getRun(t, triggered.id));
  });

  it('of triggers made at once on one stack, admits one and queues the rest behind it, each response as a read shows it', async () => {
    const stack = await createStack(t, [{ id: 'a' }]);
    const runs = await Promise.all(Array.from({ length: 12 }, () => triggerRun(t, stack.id)));
    const admitted = runs.filter((r) => r.queueReason === 'WAITING_FOR_WORKER');
    assert.equal(admitted.length, 1, JSON.stringify(runs.map((r) => r.queueReason)));
    for (const run of runs) assert.deepEqual(run, await getRun(t, run.id));
    for (const run of runs.filter((r) => r !== admitted[0])) assert.match(run.queueState.reason, new RegExp(admitted[0].id));
    const { rows } = await sql<{ active_run_id: string }>`select active_run_id from stacks where id = ${stack.id}`.execute(t.db);
    assert.equal(rows[0].active_run_id, admitted[0].id);
  });

  it('a trigger that waited for its stack runs the pipeline version committed while it waited', async () => {
    const stack = await createStack(t, [{ id: 'a' }]);
    const before = await triggerRun(t, stack.id);
    // A change of the stack holds its lock (as an update of its config does) and commits a new version of
    // its pipeline while the trigger waits for that lock: the trigger must see the new version.
    let triggered: Promise<any> | undefined;
    const newVersionId = `v2-${stack.id}`;
    await t.db.transaction().execute(async (trx) => {
      await sql`update stacks set updated_at = now() where id = ${stack.id}`.execute(trx);
      await sql`insert into pipeline_versions (id, organization_id, pipeline_id, version, config)
                select ${newVersionId}, organization_id, pipeline_id, version + 1, config from pipeline_versions where id = ${before.pipelineVersionId}`.execute(
        trx,
      );
      await sql`update pipelines set latest_version = latest_version + 1 where id = ${stack.changePipelineId}`.execute(trx);
      triggered = triggerRun(t, stack.id);
      await lockWaiters(t.db); // The trigger's statement waits on the stack's row lock.
    });
    const after = await triggered!;
    assert.equal(after.pipelineVersionId, newVersionId);
    assert.deepEqual(after, await getRun(t, after.id));
  });
});
