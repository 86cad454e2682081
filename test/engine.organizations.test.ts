import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { claimStep } from '../src/engine/step-lifecycle.ts';
import { createOrganization, serviceAccountCaller } from './helpers/callers.ts';
import { createStack, startEngineTestApp, stepsOf, triggerRun, waitFor, type EngineTestApp } from './helpers/engine.ts';

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

    // Several of the worker's polls (500 ms here): six of its eight slots stay free, the other two steps wait.
    let most = 0;
    for (const until = Date.now() + 1_500; Date.now() < until; await sleep(50)) most = Math.max(most, await runningIn(busy));
    assert.equal(most, 2, 'never more than the limit at once');
    const waiting = (await Promise.all(runs.map((r) => stepsOf(t, r.id)))).flat().filter((s) => s.status === 'QUEUED');
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

  it("of two claims racing for an organization's last slot one wins; the other step stays QUEUED under a job that waits, flagged with its organization", async () => {
    for (const w of t.workers) await w.stop();
    t.workers.length = 0;
    const runs: any[] = [];
    for (let i = 0; i < 2; i++) runs.push(await triggerRun(t, (await createStack(t, [{ id: 'only' }])).id));
    const steps = await Promise.all(runs.map(async (r) => (await stepsOf(t, r.id))[0]));
    // As graphile-worker does when a worker takes a job.
    for (const s of steps)
      await sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'racer', attempts = 1 where key = ${`step:${s.id}`}`.execute(t.db);

    const worker = { id: 'racer', leaseMs: 60_000, organizationLimit: 1 };
    const claims = await Promise.all(steps.map((s, i) => claimStep(t.db, s.id, runs[i].id, worker)));
    assert.equal(claims.filter(Boolean).length, 1, 'exactly one claim took the slot');
    const loser = claims.indexOf(undefined);
    const deferred = steps[loser];
    assert.equal((await t.call('GET', `/pipeline-step-executions/${deferred.id}`)).body.data.status, 'QUEUED');
    const job = await sql<{ flags: Record<string, boolean>; waits: boolean; locked: boolean }>`
      select flags, run_at > now() as waits, locked_at is not null as locked from graphile_worker.jobs where key = ${`step:${deferred.id}`}`.execute(t.db);
    assert.deepEqual(job.rows, [{ flags: { [`org:${runs[0].organizationId}`]: true }, waits: true, locked: false }]);

    const transitions = await t.call('GET', `/pipeline-runs/${runs[loser].id}/transitions`);
    assert.ok(!transitions.body.data.some((tr: any) => tr.toStatus === 'RUNNING'), 'the deferred claim started nothing');
    for (const r of runs) await t.call('POST', `/pipeline-runs/${r.id}/cancel`);
  });
});
