// How the service's load balancer sees each running task (docs/deployments.md#load-balancer-targets):
// once an event says a task runs, worker processes ask ECS which target groups the service registers its
// tasks in and ask Elastic Load Balancing how the first sees the task, and keep that as the task's
// target group snapshot; again later while its health checks are still pending. The event never waits.

import { DescribeServicesCommand } from '@aws-sdk/client-ecs';
import {
  DescribeTargetGroupsCommand,
  DescribeTargetHealthCommand,
  type TargetGroup,
  type TargetHealthDescription,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { findCloudAccountForIngest } from '../cloud-accounts/cloud-accounts.repo.ts';
import { assumeRole, awsCall, awsError, ecsClientAs, elbClientAs, type AssumedRole } from '../platform/aws/aws-clients.ts';
import type { AwsConfig } from '../platform/aws/aws-config.ts';
import type { Db } from '../platform/db/db.ts';
import { retryAt, type DueCheck } from '../platform/due-poller.ts';
import { AppError } from '../platform/errors.ts';
import { claimDue } from '../platform/db/claim-due.ts';
import { deferTarget, findDeploymentService, setTargetSnapshot, type DeploymentResourceRow } from './deployments.repo.ts';
import type { TargetGroupSnapshot } from './deployments.schema.ts';
import { parseEcsArn } from './ecs-events.ts';

const LEASE_SECONDS = 300;

export interface TargetDeps {
  db: Db;
  aws: AwsConfig;
}

/** The due work of container tasks: their load balancer targets to read. */
export function taskTargetChecks(deps: TargetDeps): DueCheck[] {
  return [
    {
      name: 'task-target',
      claim: (db) => claimDue<DeploymentResourceRow>(db, ['deployment_resources', 'target_check_at'], LEASE_SECONDS),
      run: (task: DeploymentResourceRow) => readTaskTarget(deps, task),
    },
  ];
}

/** The service's first load balancer target group and the container port it sends to, or undefined. */
async function targetGroupOf(aws: AwsConfig, role: AssumedRole, region: string, clusterArn: string, serviceArn: string) {
  const ecs = await ecsClientAs(aws, role, region);
  try {
    const answer = await awsCall('ECS DescribeServices', () => ecs.send(new DescribeServicesCommand({ cluster: clusterArn, services: [serviceArn] })));
    const failure = answer.failures?.[0];
    if (failure || !answer.services?.[0]) throw awsError('ECS DescribeServices', failure?.reason ?? 'MISSING', 'the service was not found in its cluster');
    return answer.services[0].loadBalancers?.find((lb) => lb.targetGroupArn);
  } finally {
    ecs.destroy();
  }
}

async function describeTarget(aws: AwsConfig, role: AssumedRole, region: string, targetGroupArn: string, id: string, port: number | undefined) {
  const elb = await elbClientAs(aws, role, region);
  try {
    const groups = await awsCall('ELB DescribeTargetGroups', () => elb.send(new DescribeTargetGroupsCommand({ TargetGroupArns: [targetGroupArn] })));
    const health = await awsCall('ELB DescribeTargetHealth', () =>
      elb.send(new DescribeTargetHealthCommand({ TargetGroupArn: targetGroupArn, Targets: [{ Id: id, ...(port ? { Port: port } : {}) }] })),
    );
    const target = health.TargetHealthDescriptions?.[0];
    if (!target?.TargetHealth?.State) throw awsError('ELB DescribeTargetHealth', 'NoDescription', 'the load balancer described no such target');
    return { group: groups.TargetGroups?.[0], target };
  } finally {
    elb.destroy();
  }
}

/** snapshotOf puts what Elastic Load Balancing said of the group and the task in the shape deployment resources keep. */
export function snapshotOf(targetGroupArn: string, group: TargetGroup | undefined, target: TargetHealthDescription, id: string, port?: number) {
  const targetPort = target.Target?.Port ?? port;
  const matcher = group?.Matcher?.HttpCode ?? group?.Matcher?.GrpcCode;
  const snapshot: TargetGroupSnapshot = {
    capturedAt: new Date().toISOString(),
    source: 'event-ingest',
    targetGroupArn,
    ...(group?.TargetGroupName ? { targetGroupName: group.TargetGroupName } : {}),
    taskTarget: {
      id: targetPort ? `${id}:${targetPort}` : id,
      rawId: target.Target?.Id ?? id,
      state: target.TargetHealth?.State ?? 'unavailable',
      ...(targetPort ? { port: targetPort } : {}),
      ...(target.TargetHealth?.Reason ? { reasonCode: target.TargetHealth.Reason } : {}),
      ...(target.TargetHealth?.Description ? { description: target.TargetHealth.Description } : {}),
    },
  };
  if (group) {
    snapshot.healthCheck = Object.fromEntries(
      Object.entries({
        port: group.HealthCheckPort,
        protocol: group.HealthCheckProtocol,
        path: group.HealthCheckPath,
        matcherSummary: matcher,
        intervalSeconds: group.HealthCheckIntervalSeconds,
        timeoutSeconds: group.HealthCheckTimeoutSeconds,
        healthyThresholdCount: group.HealthyThresholdCount,
        unhealthyThresholdCount: group.UnhealthyThresholdCount,
      }).filter(([, v]) => v !== undefined),
    );
  }
  return snapshot;
}

/**
 * readTaskTarget reads and keeps how the load balancer sees the task. Only tasks with an address of their
 * own (awsvpc) are read: a target group registers a task of another network mode by its EC2 instance.
 */
export async function readTaskTarget(deps: TargetDeps, task: DeploymentResourceRow): Promise<void> {
  const data = task.data as { clusterArn?: string; taskTargetId?: string };
  const serviceArn = await findDeploymentService(deps.db, task.deployment_id);
  const region = parseEcsArn(serviceArn ?? '')?.region;
  if (!data.taskTargetId || !data.clusterArn || !serviceArn || !region || !task.cloud_account_id)
    return deferTarget(deps.db, task.id, task.target_check_attempts, null);
  const account = await findCloudAccountForIngest(deps.db, task.cloud_account_id);
  if (!account) return deferTarget(deps.db, task.id, task.target_check_attempts, null);
  const role = { roleArn: account.role_arn, externalId: account.external_id, sessionName: `plinth-${task.id}` };
  const attempts = task.target_check_attempts + 1;
  try {
    // One AssumeRole for both services' clients.
    const assumed = await assumeRole(deps.aws, role, region);
    const lb = await targetGroupOf(deps.aws, assumed, region, data.clusterArn, serviceArn);
    if (!lb?.targetGroupArn) return deferTarget(deps.db, task.id, attempts, null);
    const { group, target } = await describeTarget(deps.aws, assumed, region, lb.targetGroupArn, data.taskTargetId, lb.containerPort);
    const snapshot = snapshotOf(lb.targetGroupArn, group, target, data.taskTargetId, lb.containerPort);
    // A target still being checked is read again; one the checks have judged is not.
    await setTargetSnapshot(deps.db, task.id, snapshot, attempts, snapshot.taskTarget.state === 'initial' ? retryAt(attempts) : null);
  } catch (error) {
    // Whatever failed, the attempt counts: a read that fails alike each time ends after MAX_DUE_ATTEMPTS.
    await deferTarget(deps.db, task.id, attempts, retryAt(attempts));
    if (!(error instanceof AppError)) throw error;
  }
}
