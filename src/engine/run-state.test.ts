import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StepConfig } from '../pipelines/pipeline-config.ts';
import { assertAwaitingApproval, assertCancellable, assertRetryable, nextRetry, planRun, type ExecutionState, type RunState } from './run-state.ts';

const steps: StepConfig[] = [
  { id: 'a', name: 'A', type: 'script', with: { command: 'true' } },
  { id: 'b', name: 'B', type: 'script', with: { command: 'true' } },
  { id: 'gate', name: 'Gate', type: 'approval', needs: ['a', 'b'] },
  { id: 'c', name: 'C', type: 'script', with: { command: 'true' }, needs: ['gate'] },
];

let n = 0;
const exec = (stepId: string, status: ExecutionState['status'], retryAttempt = 0): ExecutionState => ({ id: `e${++n}`, stepId, status, retryAttempt });
const state = (executions: ExecutionState[], over: Partial<RunState> = {}): RunState => ({
  status: 'RUNNING',
  started: true,
  action: 'apply',
  autoapprove: false,
  steps,
  executions,
  ...over,
});

describe('planRun', () => {
  it('passes an approval whose every need succeeded with nothing to approve, and waits when one has something', () => {
    const nothing = (stepId: string) => ({ ...exec(stepId, 'SUCCEEDED'), nothingToApprove: true });
    const passed = planRun(state([nothing('a'), nothing('b')]));
    assert.deepEqual(
      passed.create.map((c) => [c.stepId, c.status, c.reason]),
      [
        ['gate', 'SUCCEEDED', 'approved automatically (nothing to approve)'],
        ['c', 'QUEUED', 'its needs succeeded'],
      ],
    );
    const waits = planRun(state([nothing('a'), exec('b', 'SUCCEEDED')]));
    assert.deepEqual(
      waits.create.map((c) => [c.stepId, c.status]),
      [['gate', 'WAITING_FOR_APPROVAL']],
    );
  });

  it('starts every step without needs at once, and the run stays QUEUED until one is claimed', () => {
    const d = planRun(state([], { status: 'QUEUED', started: false }));
    assert.deepEqual(
      d.create.map((c) => [c.stepId, c.status]),
      [
        ['a', 'QUEUED'],
        ['b', 'QUEUED'],
      ],
    );
    assert.equal(d.runStatus, 'QUEUED');
  });

  it('starts a step only when everything it needs succeeded', () => {
    assert.deepEqual(planRun(state([exec('a', 'SUCCEEDED'), exec('b', 'RUNNING')])).create, []);
    const d = planRun(state([exec('a', 'SUCCEEDED'), exec('b', 'SUCCEEDED')]));
    assert.deepEqual(
      d.create.map((c) => [c.stepId, c.status]),
      [['gate', 'WAITING_FOR_APPROVAL']],
    );
    assert.equal(d.runStatus, 'WAITING_FOR_APPROVAL');
  });

  it('autoapprove resolves approvals at once and goes on to what follows them', () => {
    const d = planRun(state([exec('a', 'SUCCEEDED'), exec('b', 'SUCCEEDED')], { autoapprove: true }));
    assert.deepEqual(
      d.create.map((c) => [c.stepId, c.status]),
      [
        ['gate', 'SUCCEEDED'],
        ['c', 'QUEUED'],
      ],
    );
    assert.equal(d.runStatus, 'RUNNING');
  });

  it('creates a step after what its start follows, even when the config lists it first', () => {
    const listedFirst: StepConfig[] = [steps[3], ...steps.slice(0, 3)];
    const d = planRun(state([exec('a', 'SUCCEEDED'), exec('b', 'SUCCEEDED')], { autoapprove: true, steps: listedFirst }));
    assert.deepEqual(
      d.create.map((c) => c.stepId),
      ['gate', 'c'],
    );
  });

  it('a plan run skips approvals and everything after them, and succeeds without them', () => {
    const first = planRun(state([], { action: 'plan', status: 'QUEUED', started: false }));
    assert.deepEqual(
      first.create.map((c) => [c.stepId, c.status]),
      [
        ['a', 'QUEUED'],
        ['b', 'QUEUED'],
        ['gate', 'SKIPPED'],
        ['c', 'SKIPPED'],
      ],
    );
    const done = planRun(state([exec('a', 'SUCCEEDED'), exec('b', 'SUCCEEDED'), exec('gate', 'SKIPPED'), exec('c', 'SKIPPED')], { action: 'plan' }));
    assert.equal(done.runStatus, 'SUCCEEDED');
  });

  it('a step failed for good fails the run, cancels what still runs and skips what never started', () => {
    const running = exec('b', 'RUNNING');
    const d = planRun(state([exec('a', 'FAILED'), running]));
    assert.equal(d.runStatus, 'FAILED');
    assert.equal(d.error?.code, 'Engine:Run:STEP_FAILED');
    assert.deepEqual(d.cancel, [running.id]);
    const why = { code: 'Engine:Sandbox:UNAVAILABLE', message: 'this host cannot isolate steps' };
    const told = planRun(state([{ ...exec('a', 'FAILED'), error: why }, running]));
    assert.equal(told.error?.message, 'Step "A" failed: this host cannot isolate steps', 'the run says why its step failed');
    assert.deepEqual((told.error?.metadata as { stepError?: unknown } | undefined)?.stepError, why);
    assert.deepEqual(
      d.create.map((c) => [c.stepId, c.status]),
      [
        ['gate', 'SKIPPED'],
        ['c', 'SKIPPED'],
      ],
    );
  });

  it('the latest attempt of a step counts: a queued retry keeps the run going', () => {
    const d = planRun(state([exec('a', 'FAILED', 0), exec('a', 'QUEUED', 1), exec('b', 'SUCCEEDED')]));
    assert.equal(d.runStatus, 'RUNNING');
    assert.deepEqual(d.create, []);
  });

  it('every step succeeded: the run succeeded; a finished run is left alone', () => {
    const all = steps.map((s) => exec(s.id, 'SUCCEEDED'));
    assert.equal(planRun(state(all)).runStatus, 'SUCCEEDED');
    assert.deepEqual(planRun(state([], { status: 'CANCELLED' })), { runStatus: 'CANCELLED', create: [], cancel: [] });
  });
});

describe('retry policy and refusals', () => {
  it('retries up to maxAttempts in total, flagging the last allowed attempt', () => {
    const step: StepConfig = { id: 's', name: 'S', type: 'script', retry: { maxAttempts: 3 } };
    assert.deepEqual(nextRetry(step, 0), { retryAttempt: 1, isLastRetry: false });
    assert.deepEqual(nextRetry(step, 1), { retryAttempt: 2, isLastRetry: true });
    assert.equal(nextRetry(step, 2), undefined);
    assert.equal(nextRetry({ ...step, retry: undefined }, 0), undefined);
  });

  it('refuses illegal moves with 409s', () => {
    assert.throws(
      () => assertAwaitingApproval('SUCCEEDED', 'x'),
      (e: any) => e.status === 409 && e.code === 'Api:StepExecution:NOT_WAITING_FOR_APPROVAL',
    );
    assert.doesNotThrow(() => assertAwaitingApproval('WAITING_FOR_APPROVAL', 'x'));
    assert.throws(
      () => assertCancellable('FAILED', 'r'),
      (e: any) => e.status === 409,
    );
    assert.doesNotThrow(() => assertCancellable('QUEUED', 'r'));
    assert.throws(
      () => assertRetryable('RUNNING', 'r'),
      (e: any) => e.code === 'Api:PipelineRun:NOT_RETRYABLE',
    );
    assert.doesNotThrow(() => assertRetryable('CANCELLED', 'r'));
  });
});
