import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { assertHistoryConsistent, injectFault, markedCommand, processStarts, type FaultKind } from './helpers/faults.ts';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import {
  FAST_ENGINE_ENV,
  createStack,
  startEngineTestApp,
  stepsOf,
  tempDir,
  triggerRun,
  waitFor,
  waitForRunStatus,
  type EngineTestApp,
  type StepSpec,
} from './helpers/engine.ts';

// Steps here write marker files on the host; a sandbox must not hide them.
const UNSANDBOXED = { sandbox: loadEngineConfig({ ...FAST_ENGINE_ENV, PLINTH_SANDBOX: 'off' }).sandbox };

/**
 * One injected failure at each engine write (docs/engine.md, "Exactly once"): the write is retried,
 * the run ends as it would have without the fault, no step's process starts more often than its
 * attempts, and the history chains.
 */
describe('a single database fault at any engine write', () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker(UNSANDBOXED);
  });
  after(() => t.close());

  async function runWithFault(o: { steps: (dir: string) => StepSpec[]; table?: string; on?: 'insert' | 'update'; when: string; kind: FaultKind }) {
    const dir = tempDir();
    const stack = await createStack(t, o.steps(dir));
    const fault = await injectFault(t.db, { table: o.table ?? 'step_executions', on: o.on ?? 'update', when: o.when, kind: o.kind });
    try {
      const run = await triggerRun(t, stack.id);
      const done = await waitForRunStatus(t, run.id, 'SUCCEEDED', 20_000);
      assert.equal(await fault.fired(), true, 'the fault was injected');
      await assertHistoryConsistent(t.db, run.id);
      return { dir, run: done, steps: await stepsOf(t, run.id) };
    } finally {
      await fault.remove();
    }
  }

  for (const kind of ['deadlock', 'disconnect'] as const) {
    it(`a ${kind} on the completion of a step that succeeded is retried: the step's process started once and the step SUCCEEDED`, async () => {
      const { dir, steps } = await runWithFault({
        steps: (d) => [{ id: `done-${kind}`, command: markedCommand(d), retry: { maxAttempts: 3 } }],
        when: `old.status = 'RUNNING' and new.status = 'SUCCEEDED' and new.step_id = 'done-${kind}'`,
        kind,
      });
      assert.equal(processStarts(dir, `done-${kind}`), 1);
      assert.deepEqual(
        steps.map((s) => [s.retryAttempt, s.status]),
        [[0, 'SUCCEEDED']],
      );
    });

    it(`a ${kind} on the claim is retried: the step runs once`, async () => {
      const { dir, steps } = await runWithFault({
        steps: (d) => [{ id: `claim-${kind}`, command: markedCommand(d) }],
        when: `old.status = 'QUEUED' and new.status = 'RUNNING' and new.step_id = 'claim-${kind}'`,
        kind,
      });
      assert.equal(processStarts(dir, `claim-${kind}`), 1);
      assert.deepEqual(
        steps.map((s) => s.status),
        ['SUCCEEDED'],
      );
    });

    it(`a ${kind} on a heartbeat is retried: the lease is kept and the step runs once`, async () => {
      const { dir, steps } = await runWithFault({
        steps: (d) => [{ id: `beat-${kind}`, command: markedCommand(d, 'sleep 1.5') }],
        when: `old.status = 'RUNNING' and new.status = 'RUNNING' and new.step_id = 'beat-${kind}'`,
        kind,
      });
      assert.equal(processStarts(dir, `beat-${kind}`), 1);
      assert.deepEqual(
        steps.map((s) => [s.retryAttempt, s.status]),
        [[0, 'SUCCEEDED']],
      );
    });

    it(`a ${kind} while the run advances to the next step is retried: each step runs once`, async () => {
      const { dir, steps } = await runWithFault({
        steps: (d) => [
          { id: 'first', command: markedCommand(d) },
          { id: `next-${kind}`, command: markedCommand(d), needs: ['first'] },
        ],
        on: 'insert',
        when: `new.step_id = 'next-${kind}'`,
        kind,
      });
      assert.equal(processStarts(dir, 'first'), 1);
      assert.equal(processStarts(dir, `next-${kind}`), 1);
      assert.deepEqual(
        steps.map((s) => s.status),
        ['SUCCEEDED', 'SUCCEEDED'],
      );
    });

    it(`a ${kind} on the reaper's write is retried: the lost attempt fails over once and its retry runs once`, async () => {
      const dir = tempDir();
      const stepId = `reaped-${kind}`;
      const stack = await createStack(t, [{ id: stepId, command: markedCommand(dir), retry: { maxAttempts: 2 } }]);
      // Park the workers so the attempt can be handed to a worker that is already dead.
      for (const w of t.workers) await w.stop();
      t.workers.length = 0;
      const run = await triggerRun(t, stack.id);
      const [queued] = await stepsOf(t, run.id);
      await sql`update step_executions set status = 'RUNNING', lease_owner = 'dead-worker', lease_epoch = 1, lease_expires_at = now() - interval '1 second'
                 where id = ${queued.id}`.execute(t.db);
      const fault = await injectFault(t.db, {
        table: 'step_executions',
        on: 'update',
        when: `old.status = 'RUNNING' and new.status = 'FAILED' and new.step_id = '${stepId}'`,
        kind,
      });
      try {
        await t.startWorker(UNSANDBOXED);
        await waitForRunStatus(t, run.id, 'SUCCEEDED', 20_000);
        assert.equal(await fault.fired(), true, 'the fault was injected');
      } finally {
        await fault.remove();
      }
      const steps = await stepsOf(t, run.id);
      assert.deepEqual(
        steps.map((s) => [s.retryAttempt, s.status, s.error?.code ?? null]),
        [
          [0, 'FAILED', 'Engine:Worker:LOST'],
          [1, 'SUCCEEDED', null],
        ],
      );
      assert.equal(processStarts(dir, stepId), 1, 'only the retry ran; the dead worker never did');
      const history = await sql<{ to_status: string }>`select to_status from run_transitions where step_execution_id = ${queued.id} order by id`.execute(t.db);
      assert.deepEqual(
        history.rows.map((r) => r.to_status),
        ['QUEUED', 'FAILED'],
        'failed over once, by one reaper',
      );
    });
  }

  it('a deadlock on the hand-back of a draining worker is retried: the step goes back to the queue and runs to the end once more', async () => {
    const dir = tempDir();
    const stack = await createStack(t, [{ id: 'drained', command: markedCommand(dir, 'sleep 30') }]);
    const fault = await injectFault(t.db, {
      table: 'step_executions',
      on: 'update',
      when: `old.status = 'RUNNING' and new.status = 'QUEUED' and new.step_id = 'drained'`,
      kind: 'deadlock',
    });
    try {
      const run = await triggerRun(t, stack.id);
      await waitFor('the step to start', async () => (processStarts(dir, 'drained') === 1 ? true : undefined));
      for (const w of t.workers) await w.stop();
      t.workers.length = 0;
      assert.equal(await fault.fired(), true, 'the fault was injected');
      const [step] = await stepsOf(t, run.id);
      assert.equal(step.status, 'QUEUED', 'handed back despite the fault');
      await assertHistoryConsistent(t.db, run.id);
      const cancelled = await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
      assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    } finally {
      await fault.remove();
      await t.startWorker(UNSANDBOXED);
    }
  });
});
