import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { enqueueStepJob } from '../src/engine/executions.repo.ts';
import { claimStep, clearLapsedStepSlots, releaseStepSlot } from '../src/engine/step-lifecycle.ts';
import { createOrganization, serviceAccountCaller } from './helpers/callers.ts';
import { createStack, startEngineTestApp, stepsOf, triggerRun, waitFor, waitForLine, type EngineTestApp } from './helpers/engine.ts';

describe('organizations share the workers', () => {
  let t: EngineTestApp;
  before(async () => (t = await startEngineTestApp()));
  after(() => t.close());

  const runningIn = async (organizationId: string) =>
    (await sql<{ n: number }>`select count(*)::int as n from step_executions where status = 'RUNNING' and organization_id = ${organizationId}`.execute(t.db))
      .rows[0].n;

  it("one organization runs at most its limit of steps, another organization's step runs meanwhile, and a freed slot goes to a waiting step", async () => {
    await t.startWorker({ organizationMaxRunningSteps: 2 });
    const runs: any[] = [];
    for (let i = 0; i < 4; i++) runs.push(await triggerRun(t, (await createStack(t, [{ id: 'long', command: 'sleep 60' }])).id));
    const busy = runs[0].organizationId as string;
    await waitFor('two steps of the busy organization running', async () => ((await runningIn(busy)) === 2 ? true : undefined));

    // Several of the worker's polls (500 ms here): six of its eight slots stay free, the other two steps
    // wait, and the worker leaves their jobs alone (a claim it deferred would give a step a new job).
    const queued = async () => (await Promise.all(runs.map((r) => stepsOf(t, r.id)))).flat().filter((s) => s.status === 'QUEUED');
    // The first claims may have deferred the other two before the worker knew the organization full.
    await waitFor('the waiting steps to rest under jobs no worker holds', async () => {
      const free = await sql<{ n: number }>`
        select count(*)::int as n from graphile_worker.jobs j join step_executions e on j.key = 'step:' || e.id
         where e.status = 'QUEUED' and e.organization_id = ${busy} and j.locked_at is null`.execute(t.db);
      return free.rows[0].n === 2 ? true : undefined;
    });
    const waiting = await queued();
    let most = 0;
    for (const until = Date.now() + 1_500; Date.now() < until; await sleep(50)) most = Math.max(most, await runningIn(busy));
    assert.equal(most, 2, 'never more than the limit at once');
    assert.deepEqual(
      (await queued()).map((s) => [s.id, s.engineRunId]),
      waiting.map((s) => [s.id, s.engineRunId]),
      'the waiting steps kept their jobs: no worker took them meanwhile',
    );
    assert.equal(waiting.length, 2);

    const other = await createOrganization(t, 'Second tenant');
    const caller = await serviceAccountCaller(t, 'ADMIN', other);
    const quick = await triggerRun(t, (await createStack(t, [{ id: 'quick', command: 'echo done' }], caller.token)).id, {}, caller.token);
    await waitFor('the other organization run to succeed', async () => {
      const run = await t.call('GET', `/pipeline-runs/${quick.id}`, { token: caller.token });
      return run.body.data.status === 'SUCCEEDED' ? true : undefined;
    });
    assert.equal(await runningIn(busy), 2, 'the busy organization still waits for a slot of its own');

    const running: any[] = [];
    for (const r of runs) if ((await stepsOf(t, r.id))[0].status === 'RUNNING') running.push(r);
    assert.equal((await t.call('POST', `/pipeline-runs/${running[0].id}/cancel`)).status, 200);
    const started = await waitFor('a waiting step to take the freed slot', async () => {
      const now = (await Promise.all(waiting.map((s) => t.call('GET', `/pipeline-step-executions/${s.id}`)))).map((r) => r.body.data.status);
      return now.includes('RUNNING') ? now : undefined;
    });
    assert.deepEqual(started.sort(), ['QUEUED', 'RUNNING']);
    assert.equal(await runningIn(busy), 2);
    for (const r of runs) await t.call('POST', `/pipeline-runs/${r.id}/cancel`);
  });

  it("of two claims racing for an organization's last slot one wins; the other step stays QUEUED under a new job in its old place, flagged with its organization", async () => {
    for (const w of t.workers) await w.stop();
    t.workers.length = 0;
    const runs: any[] = [];
    for (let i = 0; i < 2; i++) runs.push(await triggerRun(t, (await createStack(t, [{ id: 'only' }])).id));
    const steps = await Promise.all(runs.map(async (r) => (await stepsOf(t, r.id))[0]));
    const queuedAt = await sql<{ run_at: Date }>`select run_at from graphile_worker.jobs where key = any(${steps.map((s) => `step:${s.id}`)})`.execute(t.db);
    // As graphile-worker does when a worker takes a job.
    for (const s of steps)
      await sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'racer', attempts = 1 where key = ${`step:${s.id}`}`.execute(t.db);

    const worker = { id: 'racer', leaseMs: 60_000, organizationLimit: 1 };
    const claims = await Promise.all(steps.map((s, i) => claimStep(t.db, s.id, runs[i].id, worker)));
    assert.equal(claims.filter(Boolean).length, 1, 'exactly one claim took the slot');
    const loser = claims.indexOf(undefined);
    const deferred = steps[loser];
    assert.equal((await t.call('GET', `/pipeline-step-executions/${deferred.id}`)).body.data.status, 'QUEUED');
    const job = await sql<{ flags: Record<string, boolean>; run_at: Date; locked: boolean }>`
      select flags, run_at, locked_at is not null as locked from graphile_worker.jobs where key = ${`step:${deferred.id}`}`.execute(t.db);
    assert.equal(job.rows.length, 1);
    assert.deepEqual(job.rows[0].flags, { [`org:${runs[0].organizationId}`]: true });
    assert.equal(job.rows[0].locked, false, 'a new job, free for any worker');
    assert.ok(
      queuedAt.rows.some((r) => r.run_at.getTime() === job.rows[0].run_at.getTime()),
      'the new job keeps the place in the queue its step had',
    );

    const transitions = await t.call('GET', `/pipeline-runs/${runs[loser].id}/transitions`);
    assert.ok(!transitions.body.data.some((tr: any) => tr.toStatus === 'RUNNING'), 'the deferred claim started nothing');
    for (const r of runs) await t.call('POST', `/pipeline-runs/${r.id}/cancel`);
    // What the worker does once a cancelled attempt's process has ended.
    const winner = claims.find((c) => c !== undefined)!;
    await releaseStepSlot(t.db, { executionId: winner.executionId, workerId: 'racer', leaseEpoch: winner.leaseEpoch });
    const left = await sql<{
      held: number;
    }>`select count(*)::int as held from step_executions where slot_held_until is not null and id = ${winner.executionId}`.execute(t.db);
    assert.equal(left.rows[0].held, 0);
  });

  it('a slot that lapsed longer ago than the stop graces is forgotten; a live one is kept', async () => {
    const runs: any[] = [];
    for (let i = 0; i < 2; i++) runs.push(await triggerRun(t, (await createStack(t, [{ id: 'only' }])).id));
    const [lapsed, live] = await Promise.all(runs.map(async (r) => (await stepsOf(t, r.id))[0].id as string));
    await sql`update step_executions set slot_held_until = now() - interval '1 hour' where id = ${lapsed}`.execute(t.db);
    await sql`update step_executions set slot_held_until = now() + interval '1 minute' where id = ${live}`.execute(t.db);
    await clearLapsedStepSlots(t.db, 60_000);
    const slots = await sql<{ id: string; held: boolean }>`
      select id, slot_held_until is not null as held from step_executions where id in (${lapsed}, ${live}) order by id`.execute(t.db);
    assert.deepEqual(Object.fromEntries(slots.rows.map((r) => [r.id, r.held])), { [lapsed]: false, [live]: true });
    await sql`update step_executions set slot_held_until = null where id = ${live}`.execute(t.db);
    for (const r of runs) await t.call('POST', `/pipeline-runs/${r.id}/cancel`);
  });

  it('a job dispatched again never waits for a time graphile-worker put it off to', async () => {
    for (const w of t.workers) await w.stop();
    t.workers.length = 0;
    const run = await triggerRun(t, (await createStack(t, [{ id: 'only' }])).id);
    const [step] = await stepsOf(t, run.id);
    // A job that failed for good: graphile-worker's backoff put it off, and a worker holds it no more.
    await sql`update graphile_worker._private_jobs set run_at = now() + interval '1 hour', attempts = max_attempts, locked_at = now() - interval '1 hour', locked_by = 'gone' where key = ${`step:${step.id}`}`.execute(
      t.db,
    );
    await enqueueStepJob(t.db, step.id, run.id);
    const job = await sql<{ due: boolean }>`select run_at <= now() as due from graphile_worker.jobs where key = ${`step:${step.id}`}`.execute(t.db);
    assert.deepEqual(job.rows, [{ due: true }]);
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
  });

  it('a cancelled step holds its slot until its process has stopped', async () => {
    for (const w of t.workers) await w.stop();
    t.workers.length = 0;
    await t.startWorker({ organizationMaxRunningSteps: 1 });
    // Deaf to SIGINT and SIGTERM: only the SIGKILL after both graces (1 s each here) ends it.
    const stubborn = await triggerRun(t, (await createStack(t, [{ id: 'stubborn', command: "trap '' INT TERM; echo deaf; sleep 30" }])).id);
    const [held] = await stepsOf(t, stubborn.id);
    await waitForLine(t, held.id, /^deaf$/);
    const next = await triggerRun(t, (await createStack(t, [{ id: 'next', command: 'echo next' }])).id);

    assert.equal((await t.call('POST', `/pipeline-runs/${stubborn.id}/cancel`)).status, 200);
    const cancelledAt = Date.now();
    await sleep(1_000);
    assert.equal((await stepsOf(t, next.id))[0].status, 'QUEUED', 'the slot is still held while the cancelled process stops');
    await waitFor('the next run to succeed', async () =>
      (await t.call('GET', `/pipeline-runs/${next.id}`)).body.data.status === 'SUCCEEDED' ? true : undefined,
    );
    const [ran] = await stepsOf(t, next.id);
    const startedAfterMs = Date.parse(ran.startedAt) - cancelledAt;
    assert.ok(startedAfterMs >= 1_500, `the next step started ${startedAfterMs} ms after the cancel, before the graces ran out`);
    const slots = await sql<{ held: number }>`
      select count(*)::int as held from step_executions where slot_held_until is not null and id in (${held.id}, ${ran.id})`.execute(t.db);
    assert.equal(slots.rows[0].held, 0, 'both slots were given back');
  });
});
