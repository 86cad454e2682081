import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { MAX_STEP_RANK } from '../src/engine/executions.repo.ts';
import { claimStep } from '../src/engine/step-lifecycle.ts';
import { createOrganization, userCaller } from './helpers/callers.ts';
import { createStack, startEngineTestApp, stepsOf, triggerRun, waitFor, type EngineTestApp } from './helpers/engine.ts';

/** A member of a new organization of its own. */
async function tenant(t: EngineTestApp, name: string): Promise<string> {
  const organization = await createOrganization(t, name);
  return (await userCaller(t, `member@${name.toLowerCase().replaceAll(' ', '-')}.test`, 'MEMBER', organization)).token;
}

/** `count` runs of one-step stacks of `token`'s organization, each triggered once: their steps wait QUEUED. */
async function queuedSteps(t: EngineTestApp, token: string, count: number, command = 'true') {
  const steps: { id: string; runId: string }[] = [];
  for (let i = 0; i < count; i++) {
    const stack = await createStack(t, [{ id: 'only', command }], token);
    const run = await triggerRun(t, stack.id, {}, token);
    const [step] = await stepsOf(t, run.id, token);
    assert.equal(step.status, 'QUEUED');
    steps.push({ id: step.id, runId: run.id });
  }
  return steps;
}

/** Waits until every run of `runIds` (of any organization) succeeded. */
async function allSucceeded(t: EngineTestApp, runIds: string[]) {
  await waitFor(
    'the runs to succeed',
    async () => {
      const { rows } = await sql<{
        n: number;
      }>`select count(*)::int as n from pipeline_runs where id = any(${runIds}::text[]) and status = 'SUCCEEDED'`.execute(t.db);
      return rows[0].n === runIds.length ? true : undefined;
    },
    30_000,
  );
}

/** The priority of each step's job, by step execution id. */
async function ranks(t: EngineTestApp, ids: string[]): Promise<number[]> {
  const { rows } = await sql<{ id: string; priority: number }>`
    select e.id, j.priority from step_executions e join graphile_worker.jobs j on j.id = e.engine_job_id::bigint
     where e.id = any(${ids}::text[])`.execute(t.db);
  const byId = new Map(rows.map((r) => [r.id, r.priority]));
  return ids.map((id) => byId.get(id) ?? -1);
}

describe('worker slots shared between organizations', () => {
  let t: EngineTestApp;
  before(async () => (t = await startEngineTestApp()));
  after(() => t.close());

  it("a free slot goes to the organization running the fewest steps: one's backlog holds no other's step behind it", async () => {
    const busy = await tenant(t, 'Busy One');
    const quiet = await tenant(t, 'Quiet One');
    const backlog = await queuedSteps(t, busy, 4);
    const [late] = await queuedSteps(t, quiet, 1);
    assert.deepEqual(
      await ranks(
        t,
        [...backlog, late].map((s) => s.id),
      ),
      [0, 1, 2, 3, 0],
      'each ranked after its own organization’s unfinished steps',
    );
    await t.startWorker({ concurrency: 1 });
    await allSucceeded(
      t,
      [...backlog, late].map((s) => s.runId),
    );
    const { rows } = await sql<{ id: string }>`
      select id from step_executions where id = any(${[...backlog, late].map((s) => s.id)}::text[]) order by started_at`.execute(t.db);
    assert.deepEqual(
      rows.map((r) => r.id),
      [backlog[0].id, late.id, backlog[1].id, backlog[2].id, backlog[3].id],
      'the quiet organization’s step ran second, not after the whole backlog',
    );
  });

  it('ranks count running and waiting steps alike, and stop at the most a rank may be', async () => {
    // Stopped, so that the steps stay QUEUED; close() still finds them.
    for (const w of t.workers) await w.stop();
    const many = await tenant(t, 'Many Steps');
    const steps = await queuedSteps(t, many, 2);
    // A running step counts as much as a waiting one.
    assert.ok(await claimStep(t.db, steps[0].id, steps[0].runId, { id: 'fair-share-test', leaseMs: 60_000 }));
    steps.push(...(await queuedSteps(t, many, MAX_STEP_RANK + 1)));
    const expected = [...Array.from({ length: MAX_STEP_RANK }, (_, i) => i + 1), MAX_STEP_RANK, MAX_STEP_RANK];
    assert.deepEqual(
      await ranks(
        t,
        steps.slice(1).map((s) => s.id),
      ),
      expected,
    );
    for (const { runId } of steps) assert.equal((await t.call('POST', `/pipeline-runs/${runId}/cancel`, { token: many })).status, 200);
  });
});
