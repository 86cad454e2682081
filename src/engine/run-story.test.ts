import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StepConfig } from '../pipelines/pipeline-config.ts';
import { applyWrites, decideHandBack, decideReap, decideReject, type Decision, type ExecutionSnapshot, type RunSnapshot } from './run-decisions.ts';
import { storyLineOf } from './run-story.ts';
import type { LockedRunRow } from './runs.repo.ts';

const steps: StepConfig[] = [
  { id: 'apply', name: 'Apply', type: 'script', with: { command: 'true' }, retry: { maxAttempts: 2 } },
  { id: 'gate', name: 'Gate', type: 'approval', needs: ['apply'] },
];
const snapshot = (executions: ExecutionSnapshot[]): RunSnapshot => ({
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
});
const row = { id: 'r1', organization_id: 'o1', stack_id: 's1', attempt_epoch: 1 } as LockedRunRow;
const ctx = { actor: 'u1', newId: () => 'e2' };
const running: ExecutionSnapshot = {
  id: 'e1',
  stepId: 'apply',
  status: 'RUNNING',
  retryAttempt: 0,
  leaseOwner: 'w1',
  leaseEpoch: 3,
  leaseExpired: true,
};

/** The lines of a decision's writes, each decided on the state the writes before it left, as locked-run.ts does. */
function story(s: RunSnapshot, decision: Decision<unknown>): Record<string, unknown>[] {
  let state = s;
  return decision.writes.flatMap((w) => {
    const line = storyLineOf(row, state, w, ctx.actor);
    state = applyWrites(state, [w]);
    return line ? [{ event: line.event, ...line.fields }] : [];
  });
}

describe('the story lines of engine decisions', () => {
  it('a reaped attempt: its lease was lost by its worker, and its retry is queued', () => {
    const s = snapshot([running]);
    const lines = story(s, decideReap(s, 'e1', ctx));
    assert.deepEqual(
      lines.map((l) => [l.event, l.stepExecutionId, l.retryAttempt]),
      [
        ['step.lease_lost', 'e1', 0],
        ['step.queued', 'e2', 1],
      ],
    );
    assert.equal(lines[0].workerId, 'w1');
    assert.equal(lines[0].errorCode, 'Engine:Worker:LOST');
    assert.deepEqual([lines[0].organizationId, lines[0].stackId, lines[0].runId, lines[0].stepName], ['o1', 's1', 'r1', 'Apply']);
  });

  it('a drained attempt is handed back by its worker; its new job is no transition', () => {
    const s = snapshot([{ ...running, leaseExpired: false }]);
    const lines = story(s, decideHandBack(s, { executionId: 'e1', workerId: 'w1', leaseEpoch: 3 }));
    assert.deepEqual(
      lines.map((l) => [l.event, l.workerId]),
      [['step.handed_back', 'w1']],
    );
  });

  it('a rejection: the step rejected by whom, then the run finished FAILED', () => {
    const done = { ...running, status: 'SUCCEEDED' as const, leaseOwner: null, leaseExpired: false };
    const gate: ExecutionSnapshot = {
      id: 'e2',
      stepId: 'gate',
      status: 'WAITING_FOR_APPROVAL',
      retryAttempt: 0,
      leaseOwner: null,
      leaseEpoch: 0,
      leaseExpired: false,
    };
    const s = { ...snapshot([done, gate]), status: 'WAITING_FOR_APPROVAL' as const };
    const lines = story(s, decideReject(s, 'e2', '2026-01-01T00:00:00Z', ctx));
    assert.deepEqual(
      lines.map((l) => l.event),
      ['step.rejected', 'run.finished'],
    );
    assert.equal(lines[0].rejectedBy, 'u1');
    assert.equal(lines[0].errorCode, 'Engine:Approval:REJECTED');
    assert.equal(lines[1].outcome, 'FAILED');
  });
});
