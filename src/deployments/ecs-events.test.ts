import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { awsFixture } from '../../test/helpers/aws-events.ts';
import { clusterOfService, readEcsEvent, serviceOfTask } from './ecs-events.ts';

describe('reading ECS events in the formats AWS documents', () => {
  it('reads a stopped task: its service, deployment, order, times, exit codes and stop', () => {
    const facts = readEcsEvent(awsFixture('ecs-task-state-change-ec2-stopped'));
    assert.equal(facts?.kind, 'task');
    if (facts?.kind !== 'task') return;
    assert.equal(facts.version, 7);
    assert.equal(facts.deploymentId, 'ecs-svc/5888882704497679006');
    assert.equal(facts.serviceArn, 'arn:aws:ecs:eu-west-1:0123456789:service/Features/Webapp');
    assert.equal(facts.lastStatus, 'STOPPED');
    assert.equal(facts.stoppedAt, '2020-06-05T12:17:11.696Z');
    assert.equal(facts.data.taskDefinitionFamily, 'webapp');
    assert.equal(facts.data.taskDefinitionRevision, 15);
    assert.equal(facts.data.exitCode, 0);
    assert.equal(facts.data.stopCode, 'UserInitiated');
    assert.equal(facts.data.launchType, 'EC2');
    assert.equal(facts.data.pullStartedAt, '2020-06-02T09:15:42.626Z');
    assert.deepEqual(facts.data.containers, [{ name: 'Webapp', lastStatus: 'STOPPED', exitCode: 0 }]);
    // Stopped by a user: not a failure.
    assert.equal(facts.error, undefined);
  });

  it('reads a running Fargate task and marks when it was running', () => {
    const facts = readEcsEvent(awsFixture('ecs-task-state-change-fargate-running'));
    assert.equal(facts?.kind, 'task');
    if (facts?.kind !== 'task') return;
    assert.equal(facts.data.capacityProviderName, 'FARGATE');
    assert.equal(facts.data.availabilityZone, 'us-east-1b');
    assert.ok(typeof facts.data.runningAt === 'string');
  });

  it('names a container that exited non-zero as the reason a stopped task failed', () => {
    const event = awsFixture('ecs-task-state-change-ec2-stopped');
    event.detail.containers[0].exitCode = 137;
    event.detail.stopCode = 'EssentialContainerExited';
    const facts = readEcsEvent(event);
    assert.deepEqual(facts?.kind === 'task' && facts.error, { code: 'Ecs:Task:CONTAINER_EXITED', message: 'Container Webapp exited with code 137' });
    assert.equal(facts?.kind === 'task' && facts.data.exitCode, 137);
  });

  it('reads each documented deployment state change', () => {
    for (const [file, status] of [
      ['in-progress', 'IN_PROGRESS'],
      ['completed', 'SUCCEEDED'],
      ['failed', 'FAILED'],
    ] as const) {
      const facts = readEcsEvent(awsFixture(`ecs-deployment-state-change-${file}`));
      assert.equal(facts?.kind, 'deployment', file);
      if (facts?.kind !== 'deployment') continue;
      assert.equal(facts.status, status);
      assert.equal(facts.serviceArn, 'arn:aws:ecs:us-west-2:111122223333:service/default/servicetest');
      assert.equal(facts.clusterArn, 'arn:aws:ecs:us-west-2:111122223333:cluster/default');
      assert.equal(facts.deploymentId, 'ecs-svc/123');
    }
  });

  it('reads a service action, and leaves events it does not read alone', () => {
    const facts = readEcsEvent(awsFixture('ecs-service-action-service-task-start-impaired'));
    assert.equal(facts?.kind, 'service-action');
    assert.equal(facts?.kind === 'service-action' && facts.eventName, 'SERVICE_TASK_START_IMPAIRED');
    assert.equal(readEcsEvent(awsFixture('acm-certificate-approaching-expiration')), undefined);
    const broken = awsFixture('ecs-task-state-change-fargate-running');
    delete broken.detail.version;
    assert.equal(readEcsEvent(broken), undefined, 'a task event without its order is not applied');
  });

  it('derives a service from a task group and a cluster from a service ARN, in both ARN formats', () => {
    assert.equal(serviceOfTask('arn:aws:ecs:us-east-1:111122223333:cluster/c', 'service:web'), 'arn:aws:ecs:us-east-1:111122223333:service/c/web');
    assert.equal(serviceOfTask('arn:aws:ecs:us-east-1:111122223333:cluster/c', 'family:web'), undefined);
    assert.equal(clusterOfService('arn:aws:ecs:us-east-1:111122223333:service/c/web'), 'arn:aws:ecs:us-east-1:111122223333:cluster/c');
    assert.equal(clusterOfService('arn:aws:ecs:us-east-1:111122223333:service/web'), undefined);
  });
});
