import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { Trx } from '../src/platform/db/db.ts';
import { claimStep, redispatchStaleSteps } from '../src/engine/step-lifecycle.ts';
import { lockWaiters } from './helpers/database.ts';
import { createStack, startEngineTestApp, stepsOf, triggerRun, waitForRunStatus, type EngineTestApp } from './helpers/engine.ts';

describe('dispatch', () => {
  let t: EngineTestApp;
  before(async () => (t = await startEngineTestApp()));
  after(() => t.close());

  it('a QUEUED step whose job was lost is dispatched again by the reaper, and runs once', async () => {
    const stack = await createStack(t, [{ id: 'only', command: 'echo ran' }]);
    const run = await triggerRun(t, stack.id);
    const [step] = await stepsOf(t, run.id);
    assert.equal(step.status, 'QUEUED');
    // As if a worker took the job and died before claiming the step: the job is gone, the step still QUEUED.
    await sql`select graphile_worker.remove_job(${'step:' + step.id})`.execute(t.db);
    await sql`update step_executions set dispatched_at = now() - interval '1 hour' where id = ${step.id}`.execute(t.db);
    await t.startWorker({ redispatchMs: 1_000 });
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const after = await stepsOf(t, run.id);
    assert.equal(after.length, 1);
    assert.notEqual(after[0].engineRunId, step.engineRunId, 'a new job dispatched it');
    const logs = await t.call('GET', `/pipeline-step-executions/${step.id}/logs`);
    assert.deepEqual(
      logs.body.data.map((l: any) => l.line),
      ['ran'],
    );
  });

  it('a job taken by a worker that died before claiming its step is dispatched again after the redispatch delay, and the step runs once', async () => {
    const {
      run,
      steps: [step],
    } = await queuedRunWithoutWorkers(t, [{ id: 'only', command: 'echo ran' }]);
    // As graphile-worker does when a worker takes a job; the worker then dies before its claim.
    await sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'dead-worker', attempts = attempts + 1 where key = ${'step:' + step.id}`.execute(
      t.db,
    );
    const since = Date.now();
    await t.startWorker({ redispatchMs: 1_500 });
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    assert.ok(Date.now() - since >= 1_000, 'not before the job was stale');
    const after = await stepsOf(t, run.id);
    assert.deepEqual(
      after.map((s) => [s.retryAttempt, s.status]),
      [[0, 'SUCCEEDED']],
    );
    assert.notEqual(after[0].engineRunId, step.engineRunId, 'a new job dispatched it');
    const logs = await t.call('GET', `/pipeline-step-executions/${step.id}/logs`);
    assert.deepEqual(
      logs.body.data.map((l: any) => l.line),
      ['ran'],
    );
  });

  it("a run's parallel first steps are dispatched by the trigger's statement, each with a job of its own that names it and its run", async () => {
    const { run, steps } = await queuedRunWithoutWorkers(t, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'after', needs: ['a', 'b', 'c'] }]);
    assert.deepEqual(steps.map((s) => [s.stepId, s.status]).sort(), [
      ['a', 'QUEUED'],
      ['b', 'QUEUED'],
      ['c', 'QUEUED'],
    ]);
    const { rows } = await sql<{ id: string; engine_job_id: string; job_id: string; key: string; payload: { stepExecutionId: string; runId: string } }>`
      select e.id, e.engine_job_id, j.id::text as job_id, j.key, j.payload from step_executions e
        join graphile_worker._private_jobs j on j.id::text = e.engine_job_id
       where e.pipeline_run_id = ${run.id} order by e.id`.execute(t.db);
    assert.equal(rows.length, 3, 'every QUEUED step has a job');
    assert.equal(new Set(rows.map((r) => r.job_id)).size, 3, 'three jobs, not one shared');
    for (const r of rows) {
      assert.equal(r.key, `step:${r.id}`);
      assert.deepEqual(r.payload, { stepExecutionId: r.id, runId: run.id });
    }
    await t.startWorker();
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
  });

  it('a job merely waiting for a free worker is not dispatched again', async () => {
    const {
      run,
      steps: [step],
    } = await queuedRunWithoutWorkers(t, [{ id: 'only' }]);
    await sql`update step_executions set dispatched_at = now() - interval '1 hour' where id = ${step.id}`.execute(t.db);
    const redispatched = await redispatchStaleSteps(t.db, 1_000);
    assert.equal(redispatched, 0);
    await t.startWorker();
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
  });

  it('a claim waits for a command holding the run, then claims on what it committed', async () => {
    const {
      run,
      steps: [a, b],
    } = await queuedRunWithoutWorkers(t, [{ id: 'a' }, { id: 'b' }]);
    const worker = { id: 'claim-test', leaseMs: 60_000 };
    assert.ok(await claimStep(t.db, a.id, run.id, worker), 'the first claim moves the run to RUNNING');
    const holder = await holdOpen(t, async (trx) => {
      await sql`select id from pipeline_runs where id = ${run.id} for no key update`.execute(trx);
    });
    const claim = claimStep(t.db, b.id, run.id, worker);
    await lockWaiters(t.db);
    await holder.commit();
    assert.equal((await claim)?.executionId, b.id);
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/cancel`)).status, 200);
    await t.startWorker();
  });

  it('of two parallel first claims, the second finds the run started by the first and claims its step without writing the start again', async () => {
    const {
      run,
      steps: [, b],
    } = await queuedRunWithoutWorkers(t, [{ id: 'a' }, { id: 'b' }]);
    // The first claim's start of the run, not yet committed: the second claim read the run QUEUED.
    const first = await holdOpen(t, async (trx) => {
      await sql`update pipeline_runs set status = 'RUNNING' where id = ${run.id} and status = 'QUEUED'`.execute(trx);
    });
    const second = claimStep(t.db, b.id, run.id, { id: 'second-claim', leaseMs: 60_000 });
    await lockWaiters(t.db);
    await first.commit();
    const claimed = await second;
    assert.equal(claimed?.executionId, b.id);
    const history = await sql<{ to_status: string; actor: string | null }>`
      select to_status, actor from run_transitions where pipeline_run_id = ${run.id} and step_execution_id is null order by id`.execute(t.db);
    assert.deepEqual(
      history.rows.map((r) => r.to_status),
      ['QUEUED'],
      'the second claim wrote no second start of the run',
    );
    const steps = await stepsOf(t, run.id);
    assert.deepEqual(
      steps.map((s) => s.status),
      ['QUEUED', 'RUNNING'],
    );
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/cancel`)).status, 200);
    await t.startWorker();
  });

  it('a first claim that meets a cancel in flight waits for the run, then writes nothing and skips its step', async () => {
    const {
      run,
      steps: [, b],
    } = await queuedRunWithoutWorkers(t, [{ id: 'a' }, { id: 'b' }]);
    // A cancel as every command makes it (the run locked first, then its steps), not yet committed:
    // the claim below read the run QUEUED, and must start neither the run nor its step.
    const cancel = await holdOpen(t, async (trx) => {
      await sql`update pipeline_runs set status = 'CANCELLED' where id = ${run.id}`.execute(trx);
      await sql`update step_executions set status = 'CANCELLED' where pipeline_run_id = ${run.id}`.execute(trx);
    });
    const claim = claimStep(t.db, b.id, run.id, { id: 'late-claim', leaseMs: 60_000 });
    await lockWaiters(t.db);
    await cancel.commit();
    assert.equal(await claim, undefined, 'the claim found its step cancelled');
    const steps = await stepsOf(t, run.id);
    assert.deepEqual(
      steps.map((s) => s.status),
      ['CANCELLED', 'CANCELLED'],
    );
    const wrote = await sql<{ n: number }>`
      select count(*)::int as n from run_transitions where pipeline_run_id = ${run.id} and (actor = 'late-claim' or to_status = 'RUNNING')`.execute(t.db);
    assert.equal(wrote.rows[0].n, 0, 'the claim wrote no history row');
    await t.startWorker();
  });

  it('a cancel that meets a claim in flight waits for it and cancels the claimed step (no lost race, no 500)', async () => {
    const {
      run,
      steps: [, b],
    } = await queuedRunWithoutWorkers(t, [{ id: 'a' }, { id: 'b' }]);
    // A claim's write, as claimStep makes it (it locks only its own execution), not yet committed.
    const claim = await holdOpen(t, async (trx) => {
      await sql`update step_executions set status = 'RUNNING', lease_owner = 'w', lease_epoch = lease_epoch + 1 where id = ${b.id} and status = 'QUEUED'`.execute(
        trx,
      );
    });
    const cancel = t.call('POST', `/pipeline-runs/${run.id}/cancel`);
    await lockWaiters(t.db);
    await claim.commit();
    const res = await cancel;
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const steps = await stepsOf(t, run.id);
    assert.deepEqual(
      steps.map((s) => s.status),
      ['CANCELLED', 'CANCELLED'],
    );
    const history = await sql<{
      from_status: string;
    }>`select from_status from run_transitions where step_execution_id = ${b.id} and to_status = 'CANCELLED'`.execute(t.db);
    assert.deepEqual(
      history.rows.map((r) => r.from_status),
      ['RUNNING'],
      'the cancel saw the claim it waited for',
    );
    await t.startWorker();
  });

  it('a command that waits for the run lock reads the steps its holder inserted: a cancel behind an advance to the next step cancels that step too', async () => {
    const {
      run,
      steps: [a],
    } = await queuedRunWithoutWorkers(t, [{ id: 'a' }, { id: 'b', needs: ['a'] }]);
    const org = (await sql<{ organization_id: string }>`select organization_id from pipeline_runs where id = ${run.id}`.execute(t.db)).rows[0].organization_id;
    // An advance as a completion makes it (the run locked, the next step inserted), not yet committed:
    // the cancel's read started before this insert was visible, and must read it once the lock is its own.
    const advance = await holdOpen(t, async (trx) => {
      await sql`select id from pipeline_runs where id = ${run.id} for no key update`.execute(trx);
      await sql`update step_executions set status = 'SUCCEEDED' where id = ${a.id}`.execute(trx);
      await sql`insert into step_executions (id, organization_id, pipeline_run_id, step_id, step_name, step_type, status, attempt_epoch)
                select ${a.id + 'b'}, ${org}, ${run.id}, 'b', 'b', 'script', 'QUEUED', (select attempt_epoch from step_executions where id = ${a.id})`.execute(
        trx,
      );
    });
    const cancel = t.call('POST', `/pipeline-runs/${run.id}/cancel`);
    await lockWaiters(t.db);
    await advance.commit();
    const res = await cancel;
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const steps = await stepsOf(t, run.id);
    assert.deepEqual(
      steps.map((s) => [s.stepId, s.status]),
      [
        ['a', 'SUCCEEDED'],
        ['b', 'CANCELLED'],
      ],
    );
    await t.startWorker();
  });

  it('a step of a CLOUD execution environment fails with a typed error: this worker runs LOCAL steps only', async () => {
    const stack = await createStack(t, [{ id: 'only' }]);
    const stackRow = (await t.call('GET', `/stacks/${stack.id}`)).body.data;
    const org = stackRow.organizationId;
    await sql`insert into execution_environments (id, organization_id, given_id, name, type) values ('ee-cloud', ${org}, 'cloud', 'Cloud', 'CLOUD')`.execute(
      t.db,
    );
    await sql`update environments set execution_environment_id = 'ee-cloud' where id = ${stackRow.environmentId}`.execute(t.db);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'FAILED');
    const [step] = await stepsOf(t, run.id);
    assert.equal(step.error.code, 'Engine:ExecutionEnvironment:UNSUPPORTED');
  });
});

/** Stops the app's workers: the test claims and commands by hand (it starts one again when done). */
async function stopWorkers(t: EngineTestApp): Promise<void> {
  for (const w of t.workers) await w.stop();
  t.workers.length = 0;
}

/** With every worker stopped, a run of a new stack of `steps`, triggered: its first steps wait QUEUED. */
async function queuedRunWithoutWorkers(t: EngineTestApp, steps: Parameters<typeof createStack>[1]) {
  await stopWorkers(t);
  const stack = await createStack(t, steps);
  const run = await triggerRun(t, stack.id);
  return { run, steps: await stepsOf(t, run.id) };
}

/**
 * holdOpen makes `writes` in a transaction it leaves open until `commit()`: what a command in flight
 * holds (its row locks, its uncommitted rows) when another one meets it.
 */
async function holdOpen(t: EngineTestApp, writes: (trx: Trx) => Promise<void>): Promise<{ commit(): Promise<void> }> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let written!: () => void;
  const ready = new Promise<void>((resolve) => (written = resolve));
  const done = t.db.transaction().execute(async (trx) => {
    await writes(trx);
    written();
    await held;
  });
  await Promise.race([ready, done]);
  return {
    commit: async () => {
      release();
      await done;
    },
  };
}
