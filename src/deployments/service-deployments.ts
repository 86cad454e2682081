// What ECS says of a container deployment beyond its events (docs/deployments.md#service-deployments):
// its service deployment's ARN, status, strategy and revisions. Events name a deployment only by its
// `ecs-svc/` id; ECS names the service deployment its current deployment belongs to
// (`currentServiceDeployment`), so worker processes read it after each deployment event, while the
// deployment is the service's primary one, and again while it is in progress. The event never waits.

import { DescribeServiceDeploymentsCommand, DescribeServicesCommand, type ServiceDeployment, type ServiceRevisionSummary } from '@aws-sdk/client-ecs';
import { findCloudAccountForIngest } from '../cloud-accounts/cloud-accounts.repo.ts';
import { awsCall, ecsClientAs } from '../platform/aws/aws-clients.ts';
import type { AwsConfig } from '../platform/aws/aws-config.ts';
import type { Db } from '../platform/db/db.ts';
import { retryAt, type DueCheck } from '../platform/due-poller.ts';
import { AppError } from '../platform/errors.ts';
import { claimDue } from '../platform/db/claim-due.ts';
import { containerStateOf, deferServiceDeployment, keepServiceDeployment, type DeploymentRow } from './deployments.repo.ts';
import { parseEcsArn } from './ecs-events.ts';

const LEASE_SECONDS = 300;
/** ECS's statuses of a service deployment that has not ended. */
const UNFINISHED = new Set(['PENDING', 'IN_PROGRESS', 'STOP_REQUESTED', 'ROLLBACK_REQUESTED', 'ROLLBACK_IN_PROGRESS']);

export interface ServiceDeploymentDeps {
  db: Db;
  aws: AwsConfig;
}

/** The due work of container deployments: their service deployments to read. */
export function serviceDeploymentChecks(deps: ServiceDeploymentDeps): DueCheck[] {
  return [
    {
      name: 'service-deployment',
      claim: (db) => claimDue<DeploymentRow>(db, ['deployments', 'service_check_at'], LEASE_SECONDS),
      run: (d: DeploymentRow) => readServiceDeployment(deps, d),
    },
  ];
}

function revisionOf(r: ServiceRevisionSummary) {
  return {
    serviceRevisionArn: r.arn ?? '',
    requestedTaskCount: r.requestedTaskCount ?? 0,
    runningTaskCount: r.runningTaskCount ?? 0,
    pendingTaskCount: r.pendingTaskCount ?? 0,
    ...(r.requestedProductionTrafficWeight !== undefined ? { requestedProductionTrafficWeight: r.requestedProductionTrafficWeight } : {}),
    ...(r.requestedTestTrafficWeight !== undefined ? { requestedTestTrafficWeight: r.requestedTestTrafficWeight } : {}),
  };
}

/** stateOf puts what ECS said of a service deployment in the shape deployments keep. */
export function stateOf(arn: string, sd: ServiceDeployment, observedAt: Date) {
  const strategy = sd.deploymentConfiguration?.strategy;
  const status = sd.status ?? 'PENDING';
  return {
    serviceDeploymentArn: arn,
    observedAt: observedAt.toISOString(),
    status,
    // A blue/green deployment keeps the source revision standing by until it ends: ECS can revert to it.
    acceptsNativeStandbyRevert: strategy === 'BLUE_GREEN' && status === 'IN_PROGRESS',
    ...(sd.statusReason ? { statusReason: sd.statusReason } : {}),
    ...(sd.lifecycleStage ? { lifecycleStage: sd.lifecycleStage } : {}),
    ...(strategy ? { strategy } : {}),
    sourceServiceRevisions: (sd.sourceServiceRevisions ?? []).map(revisionOf),
    ...(sd.targetServiceRevision ? { targetServiceRevision: revisionOf(sd.targetServiceRevision) } : {}),
  };
}

/**
 * readServiceDeployment reads the deployment's service deployment from ECS and keeps it. Its ARN is
 * known once read: ECS gives it while the deployment is the service's primary one (a later deployment
 * of the service that started first leaves it unknown).
 */
export async function readServiceDeployment(deps: ServiceDeploymentDeps, deployment: DeploymentRow): Promise<void> {
  const data = containerStateOf(deployment).data;
  const region = parseEcsArn(data.serviceArn)?.region;
  const account = deployment.cloud_account_id ? await findCloudAccountForIngest(deps.db, deployment.cloud_account_id) : undefined;
  // The due time the claim set: should an event make the deployment due again meanwhile, that stands.
  const lease = deployment.service_check_at;
  if (!region || !account || !deployment.external_deployment_id)
    return deferServiceDeployment(deps.db, deployment.id, lease, deployment.service_check_attempts, null);
  const attempts = deployment.service_check_attempts + 1;
  const role = { roleArn: account.role_arn, externalId: account.external_id, sessionName: `plinth-${deployment.id}` };
  try {
    const ecs = await ecsClientAs(deps.aws, role, region);
    try {
      let arn = data.serviceDeploymentArn;
      if (!arn) {
        const answer = await awsCall('ECS DescribeServices', () =>
          ecs.send(new DescribeServicesCommand({ cluster: data.clusterArn || undefined, services: [data.serviceArn] })),
        );
        const service = answer.services?.[0];
        const primary = service?.deployments?.find((d) => d.status === 'PRIMARY');
        // Another deployment is the primary one: this one's service deployment can no longer be named.
        if (primary?.id !== deployment.external_deployment_id) return deferServiceDeployment(deps.db, deployment.id, lease, attempts, null);
        arn = service?.currentServiceDeployment;
      }
      if (!arn) return deferServiceDeployment(deps.db, deployment.id, lease, attempts, retryAt(attempts));
      const observedAt = new Date();
      const answer = await awsCall('ECS DescribeServiceDeployments', () => ecs.send(new DescribeServiceDeploymentsCommand({ serviceDeploymentArns: [arn] })));
      const sd = answer.serviceDeployments?.[0];
      if (!sd) return deferServiceDeployment(deps.db, deployment.id, lease, attempts, retryAt(attempts));
      const state = stateOf(arn, sd, observedAt);
      await keepServiceDeployment(deps.db, deployment.id, state, { lease, attempts, next: UNFINISHED.has(state.status) ? retryAt(attempts) : null });
    } finally {
      ecs.destroy();
    }
  } catch (error) {
    // Whatever failed, the attempt counts: a read that fails alike each time ends after MAX_DUE_ATTEMPTS.
    await deferServiceDeployment(deps.db, deployment.id, lease, attempts, retryAt(attempts));
    if (!(error instanceof AppError)) throw error;
  }
}
