import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyDeploymentEvent, applyServiceAction, MAX_PROGRESS_ENTRIES, newContainerDeployment } from './deployment-state.ts';
import type { DeploymentFacts } from './ecs-events.ts';

const SERVICE = 'arn:aws:ecs:us-west-2:111122223333:service/shop/web';
const facts = (status: DeploymentFacts['status'], at: string): DeploymentFacts => ({
  kind: 'deployment',
  serviceArn: SERVICE,
  deploymentId: 'ecs-svc/1',
  eventName: { IN_PROGRESS: 'SERVICE_DEPLOYMENT_IN_PROGRESS', SUCCEEDED: 'SERVICE_DEPLOYMENT_COMPLETED', FAILED: 'SERVICE_DEPLOYMENT_FAILED' }[status],
  status,
  at,
  reason: `${status} reason`,
});

describe('a container deployment as its events arrive', () => {
  it('follows the newest event and records each step of its progress', () => {
    let state = newContainerDeployment(SERVICE, undefined);
    state = applyDeploymentEvent(state, facts('IN_PROGRESS', '2026-01-01T00:00:01.000Z')).next;
    assert.equal(state.status, 'IN_PROGRESS');
    state = applyDeploymentEvent(state, facts('SUCCEEDED', '2026-01-01T00:00:09.000Z')).next;
    assert.equal(state.status, 'SUCCEEDED');
    assert.equal(state.completedAt, '2026-01-01T00:00:09.000Z');
    assert.equal(state.data.serviceDeploymentState?.status, 'SUCCESSFUL');
    assert.deepEqual(
      state.data.events?.map((e) => [e.currentStep, e.totalSteps]),
      [
        [1, 2],
        [2, 2],
      ],
    );
  });

  it('never rolls back to an older event arriving late, but keeps it in the history in its place', () => {
    let state = applyDeploymentEvent(newContainerDeployment(SERVICE, undefined), facts('SUCCEEDED', '2026-01-01T00:00:09.000Z')).next;
    const late = applyDeploymentEvent(state, facts('IN_PROGRESS', '2026-01-01T00:00:01.000Z'));
    assert.equal(late.stale, true);
    state = late.next;
    assert.equal(state.status, 'SUCCEEDED');
    assert.deepEqual(
      state.data.events?.map((e) => e.message),
      ['IN_PROGRESS reason', 'SUCCEEDED reason'],
    );
  });

  it('records a failure with its reason as the error', () => {
    const { next } = applyDeploymentEvent(newContainerDeployment(SERVICE, undefined), facts('FAILED', '2026-01-01T00:00:05.000Z'));
    assert.deepEqual(next.error, { code: 'Ecs:Deployment:FAILED', message: 'FAILED reason' });
  });

  it('keeps one entry per event, and a bounded history', () => {
    let state = newContainerDeployment(SERVICE, undefined);
    const action = { kind: 'service-action' as const, serviceArn: SERVICE, eventName: 'SERVICE_TASK_START_IMPAIRED', at: '2026-01-01T00:00:01.000Z' };
    state = applyServiceAction(applyServiceAction(state, action), action);
    assert.equal(state.data.events?.length, 1);
    for (let i = 0; i < MAX_PROGRESS_ENTRIES + 20; i++)
      state = applyServiceAction(state, { ...action, at: new Date(Date.UTC(2026, 0, 2, 0, 0, i)).toISOString() });
    assert.equal(state.data.events?.length, MAX_PROGRESS_ENTRIES);
    assert.equal(state.data.events?.at(-1)?.startedAt, new Date(Date.UTC(2026, 0, 2, 0, 0, MAX_PROGRESS_ENTRIES + 19)).toISOString());
  });
});
