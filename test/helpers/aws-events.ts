import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'aws-events');

/** A sample event as AWS documents it (test/fixtures/aws-events, SOURCES.md names where each is from). */
export function awsFixture(name: string): any {
  return JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));
}

/**
 * awsEvent is a documented sample with the fields that say which resource it is about set to the
 * test's (the rest of the event stays as AWS wrote it), and an id of its own.
 */
export function awsEvent(name: string, change: (event: any) => void = () => {}): any {
  const event = awsFixture(name);
  event.id = randomUUID();
  change(event);
  return event;
}

export interface EcsService {
  account: string;
  region: string;
  cluster: string;
  service: string;
}

export const clusterArn = (s: EcsService) => `arn:aws:ecs:${s.region}:${s.account}:cluster/${s.cluster}`;
export const serviceArn = (s: EcsService) => `arn:aws:ecs:${s.region}:${s.account}:service/${s.cluster}/${s.service}`;

/** An ECS Deployment State Change of the service's deployment `deploymentId`, as of `updatedAt`. */
export function deploymentEvent(s: EcsService, deploymentId: string, state: 'in-progress' | 'completed' | 'failed', updatedAt: string) {
  return awsEvent(`ecs-deployment-state-change-${state}`, (e) => {
    Object.assign(e, { account: s.account, region: s.region, time: updatedAt, resources: [serviceArn(s)] });
    Object.assign(e.detail, { deploymentId, updatedAt });
  });
}

/** An ECS Task State Change of task `taskId` of the deployment, at `version`, in `lastStatus`. */
export function taskEvent(
  s: EcsService,
  deploymentId: string,
  taskId: string,
  version: number,
  lastStatus: string,
  options: { fixture?: string; at?: string; taskDefinition?: string } = {},
) {
  return awsEvent(options.fixture ?? 'ecs-task-state-change-fargate-running', (e) => {
    const taskArn = `arn:aws:ecs:${s.region}:${s.account}:task/${s.cluster}/${taskId}`;
    const at = options.at ?? new Date(Date.UTC(2026, 0, 1, 0, 0, version)).toISOString();
    Object.assign(e, { account: s.account, region: s.region, time: at, resources: [taskArn] });
    Object.assign(e.detail, {
      clusterArn: clusterArn(s),
      taskArn,
      group: `service:${s.service}`,
      startedBy: deploymentId,
      version,
      lastStatus,
      updatedAt: at,
      taskDefinitionArn: options.taskDefinition ?? `arn:aws:ecs:${s.region}:${s.account}:task-definition/${s.service}:7`,
    });
    for (const c of e.detail.containers ?? []) c.taskArn = taskArn;
  });
}
