import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StepConfig } from '../pipelines/pipeline-config.ts';
import { ConflictError } from '../platform/errors.ts';
import {
  advance,
  applyWrites,
  decideApprove,
  decideCancel,
  decideClaim,
  decideComplete,
  decideHandBack,
  decideReap,
  decideReject,
  decideRetry,
  type DecideContext,
  type ExecutionSnapshot,
  type RunSnapshot,
  type RunWrite,
} from './run-decisions.ts';

const steps: StepConfig[] = [
  { id: 'a', name: 'A', type: 'script', with: { command: 'true' }, retry: { maxAttempts: 2 } },
  { id: 'b', name: 'B', type: 'script', with: { command: 'true' } },
  { id: 'gate', name: 'Gate', type: 'approval', needs: ['a', 'b'] },
  { id: 'c', name: 'C', type: 'script', with: { command: 'true' }, needs: ['gate'] },
];

const ctx = (): DecideContext => {
  let n = 0;
  return { actor: 'u1', newId: () => `new${++n}` };
};
const exec = (id: string, stepId: string, status: ExecutionSnapshot['status'], over: Partial<ExecutionSnapshot> = {}): ExecutionSnapshot => ({
  id,
  stepId,
  status,
  retryAttempt: 0,
  leaseOwner: status === 'RUNNING' ? 'w1' : null,
  leaseEpoch: status === 'RUNNING' ? 1 : 0,
  leaseExpired: false,
  ...over,
});
const run = (executions: ExecutionSnapshot[], over: Partial<RunSnapshot> = {}): RunSnapshot => ({
  id: 'r1',
  organizationId: 'o1',
  status: 'RUNNING',
  started: true,
  admitted: true,
  action: 'apply',
  autoapprove: false,
  attemptEpoch: 1,
  stackId: 's1',
  input: null,
  steps,
  executions,
  earlier: [],
  ...over,
});
const kinds = (writes: RunWrite[]) =>
  writes.map((w) =>
    w.kind === 'execution'
      ? `${w.id}:${w.status.to}`
      : w.kind === 'newExecution'
        ? `+${w.stepId}:${w.status}`
        : w.kind === 'run'
          ? `run:${w.status?.to ?? 'set'}`
          : w.kind,
  );

describe('decideClaim', () => {
  it('the first claim of an attempt also starts the run', () => {
    const s = run([exec('e1', 'a', 'QUEUED'), exec('e2', 'b', 'QUEUED')], { status: 'QUEUED', started: false });
    const d = decideClaim(s, 'e1', { id: 'w1', leaseMs: 1000, mayAdopt: false }, ctx());
    assert.deepEqual(kinds(d.writes), ['e1:RUNNING', 'run:RUNNING']);
    assert.deepEqual(d.result, { kind: 'claimed', leaseEpoch: 1, retryAttempt: 0, stepId: 'a' });
  });

  it('a later claim writes only its execution', () => {
    const d = decideClaim(run([exec('e1', 'a', 'RUNNING'), exec('e2', 'b', 'QUEUED')]), 'e2', { id: 'w2', leaseMs: 1000, mayAdopt: false }, ctx());
    assert.deepEqual(kinds(d.writes), ['e2:RUNNING']);
  });

  it('an execution that is not QUEUED is skipped, even one this worker holds, unless its own unacknowledged claim is being retried', () => {
    const s = run([exec('e1', 'a', 'RUNNING', { leaseOwner: 'w1', leaseEpoch: 3 })]);
    assert.deepEqual(decideClaim(s, 'e1', { id: 'w1', leaseMs: 1000, mayAdopt: false }, ctx()).result, { kind: 'skip', status: 'RUNNING' });
    assert.deepEqual(decideClaim(s, 'e1', { id: 'w2', leaseMs: 1000, mayAdopt: true }, ctx()).result, { kind: 'skip', status: 'RUNNING' });
    const adopted = decideClaim(s, 'e1', { id: 'w1', leaseMs: 1000, mayAdopt: true }, ctx());
    assert.deepEqual(adopted.result, { kind: 'claimed', leaseEpoch: 3, retryAttempt: 0, stepId: 'a' });
    assert.deepEqual(adopted.writes, []);
  });
});

describe('decideComplete', () => {
  const held = { executionId: 'e1', workerId: 'w1', leaseEpoch: 1 };

  it('a success advances the run: the next steps start once everything they need succeeded', () => {
    const d = decideComplete(run([exec('e1', 'a', 'RUNNING'), exec('e2', 'b', 'SUCCEEDED')]), held, { status: 'SUCCEEDED' }, ctx());
    assert.equal(d.result, true);
    assert.deepEqual(kinds(d.writes), ['e1:SUCCEEDED', '+gate:WAITING_FOR_APPROVAL', 'run:WAITING_FOR_APPROVAL']);
  });

  it('a worker whose lease epoch is not the current one writes nothing: the attempt was taken over', () => {
    const s = run([exec('e1', 'a', 'RUNNING', { leaseEpoch: 2 })]);
    assert.deepEqual(decideComplete(s, held, { status: 'SUCCEEDED' }, ctx()), { writes: [], result: false });
    assert.deepEqual(decideComplete(run([exec('e1', 'a', 'CANCELLED')]), held, { status: 'SUCCEEDED' }, ctx()).result, false);
  });

  it('a failure with attempts left queues a retry; the last failure fails the run and stops what still runs', () => {
    const retried = decideComplete(run([exec('e1', 'a', 'RUNNING'), exec('e2', 'b', 'RUNNING')]), held, { status: 'FAILED' }, ctx());
    assert.deepEqual(kinds(retried.writes), ['e1:FAILED', '+a:QUEUED']);
    const last = decideComplete(
      run([exec('e1', 'a', 'RUNNING', { retryAttempt: 1 }), exec('e2', 'b', 'RUNNING', { leaseOwner: 'w2' })]),
      held,
      { status: 'FAILED' },
      ctx(),
    );
    assert.deepEqual(kinds(last.writes), ['e1:FAILED', 'e2:CANCELLED', 'stopProcess', '+gate:SKIPPED', '+c:SKIPPED', 'run:FAILED', 'releaseStack']);
  });
});

describe('decideReap and decideHandBack', () => {
  it('only an expired lease is reaped, as Engine:Worker:LOST, and the retry policy follows', () => {
    assert.equal(decideReap(run([exec('e1', 'a', 'RUNNING')]), 'e1', ctx()).result, false);
    const d = decideReap(run([exec('e1', 'a', 'RUNNING', { leaseExpired: true }), exec('e2', 'b', 'SUCCEEDED')]), 'e1', ctx());
    assert.deepEqual(kinds(d.writes), ['e1:FAILED', '+a:QUEUED']);
    const failed = d.writes[0];
    assert.ok(failed.kind === 'execution' && failed.set.error?.code === 'Engine:Worker:LOST');
  });

  it('a drained attempt goes back to QUEUED with a new job, only by the worker holding it', () => {
    const s = run([exec('e1', 'a', 'RUNNING')]);
    assert.deepEqual(kinds(decideHandBack(s, { executionId: 'e1', workerId: 'w1', leaseEpoch: 1 }).writes), ['e1:QUEUED', 'dispatch']);
    assert.equal(decideHandBack(s, { executionId: 'e1', workerId: 'w2', leaseEpoch: 1 }).result, false);
  });
});

describe('approvals, cancel and retry', () => {
  const waiting = run([exec('e1', 'a', 'SUCCEEDED'), exec('e2', 'b', 'SUCCEEDED'), exec('e3', 'gate', 'WAITING_FOR_APPROVAL')], {
    status: 'WAITING_FOR_APPROVAL',
  });

  it('approving lets the run go on; rejecting fails it', () => {
    assert.deepEqual(kinds(decideApprove(waiting, 'e3', 'now', ctx()).writes), ['e3:SUCCEEDED', '+c:QUEUED', 'run:RUNNING']);
    assert.deepEqual(kinds(decideReject(waiting, 'e3', 'now', ctx()).writes), ['e3:FAILED', '+c:SKIPPED', 'run:FAILED', 'releaseStack']);
  });

  it('approving a step that is not waiting, or one of an earlier attempt, is a 409', () => {
    assert.throws(() => decideApprove(waiting, 'e1', 'now', ctx()), ConflictError);
    assert.throws(() => decideApprove({ ...waiting, earlier: [{ id: 'old', status: 'CANCELLED' }] }, 'old', 'now', ctx()), ConflictError);
  });

  it('cancelling stops running steps and hands the stack on; a finished run cannot be cancelled', () => {
    const d = decideCancel(run([exec('e1', 'a', 'RUNNING'), exec('e2', 'b', 'SUCCEEDED')]), ctx());
    assert.deepEqual(kinds(d.writes), ['e1:CANCELLED', 'stopProcess', 'run:CANCELLED', 'releaseStack']);
    assert.throws(() => decideCancel(run([], { status: 'SUCCEEDED' }), ctx()), ConflictError);
  });

  it('retrying a failed run starts the next attempt epoch in the stack queue', () => {
    const s = run([exec('e1', 'a', 'FAILED')], { status: 'FAILED' });
    const d = decideRetry(s);
    assert.deepEqual(kinds(d.writes), ['run:QUEUED', 'enterStackQueue']);
    const next = applyWrites(s, d.writes);
    assert.equal(next.attemptEpoch, 2);
    assert.deepEqual(next.executions, []);
    assert.deepEqual(kinds(advance({ ...next, admitted: true }, 'admitted', ctx())), ['+a:QUEUED', '+b:QUEUED']);
    assert.throws(() => decideRetry(run([])), ConflictError);
  });
});
