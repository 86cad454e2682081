// Redeploy and rollback (docs/deployments.md#redeploy-and-rollback): a new deployment that replays the
// release a deployment stored. A module deploy's is a new run of the instance's stack with the stored
// inputs and version; a container deployment's registers its task definition again and updates the ECS
// service to it, in the cloud account's AWS account, then follows that service deployment's events.

import {
  DescribeTaskDefinitionCommand,
  RegisterTaskDefinitionCommand,
  UpdateServiceCommand,
  type RegisterTaskDefinitionCommandInput,
} from '@aws-sdk/client-ecs';
import { findCloudAccountById } from '../cloud-accounts/cloud-accounts.repo.ts';
import { lockForWrite } from '../modules/module-instances.service.ts';
import { replayModuleDeploy } from './module-replay.ts';
import { awsCall, ecsClientAs } from '../platform/aws/aws-clients.ts';
import type { AwsConfig } from '../platform/aws/aws-config.ts';
import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { AppError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { refuseWhileDeploying } from './module-deployments.ts';
import {
  failDeployment,
  findDeployment,
  findPreviousTaskDefinition,
  insertContainerRedeploy,
  nameExternalDeployment,
  rowToDeployment,
  keepTaskDefinition,
  type DeploymentRow,
} from './deployments.repo.ts';
import type { ContainerServiceData } from './deployments.schema.ts';
import { getDeploymentRow } from './deployments.service.ts';
import { parseEcsArn } from './ecs-events.ts';

export type ReplayKind = 'REDEPLOY' | 'ROLLBACK';

/** The fields of a task definition that registering it takes (DescribeTaskDefinition answers more: its ARN, revision, status, …). */
const REGISTRABLE = [
  'family',
  'taskRoleArn',
  'executionRoleArn',
  'networkMode',
  'containerDefinitions',
  'volumes',
  'placementConstraints',
  'requiresCompatibilities',
  'cpu',
  'memory',
  'pidMode',
  'ipcMode',
  'proxyConfiguration',
  'inferenceAccelerators',
  'ephemeralStorage',
  'runtimePlatform',
  'enableFaultInjection',
] as const;

/** replayDeployment makes the new deployment of a redeploy or a rollback of deployment `id`. */
export async function replayDeployment(db: Db, aws: AwsConfig, principal: Principal, id: string, kind: ReplayKind) {
  const source = await getDeploymentRow(db, principal, id);
  if (source.deployment_type === 'MODULE') {
    const data = source.data as { module_input?: Record<string, unknown>; module_version_id?: string } | null;
    if (!data?.module_input || !data.module_version_id) throw notReplayable(source, 'it stores no inputs and version');
    const row = await replayModuleDeploy(
      db,
      principal,
      source.module_instance_id,
      { moduleInput: data.module_input, moduleVersionId: data.module_version_id },
      {
        triggerSource: kind,
        sourceDeploymentId: source.id,
      },
    );
    return rowToDeployment(row);
  }
  return replayContainerDeployment(db, aws, principal, source, kind);
}

function notReplayable(source: DeploymentRow, why: string) {
  return new RuleViolationError('Deployment', 'NOT_REDEPLOYABLE', `Deployment ${source.id} cannot be deployed again: ${why}`);
}

async function replayContainerDeployment(db: Db, aws: AwsConfig, principal: Principal, source: DeploymentRow, kind: ReplayKind) {
  const stored = source.data as unknown as ContainerServiceData;
  const release = stored.deployedTaskDefinition;
  if (!release) throw notReplayable(source, 'no task of it was seen, so its task definition is unknown');
  const service = parseEcsArn(stored.serviceArn);
  if (!service || !source.cloud_account_id) throw notReplayable(source, 'its cloud account is gone');
  const account = await findCloudAccountById(db, principal.organizationId, source.cloud_account_id);
  if (!account) throw notReplayable(source, 'its cloud account is gone');

  const verb = kind === 'ROLLBACK' ? 'Roll back' : 'Redeploy';
  const data: ContainerServiceData = {
    type: 'cloud:container-service',
    clusterArn: stored.clusterArn,
    serviceArn: stored.serviceArn,
    triggeredBy: principal.userId,
    triggerChannel: 'API',
    events: [],
  };
  // Recorded first, under the instance's lock: a second redeploy meanwhile is refused, and a failure
  // below is kept in the history.
  const redeploy = await db.transaction().execute(async (trx) => {
    await lockForWrite(trx, principal, source.module_instance_id, { live: true });
    await refuseWhileDeploying(trx, source.module_instance_id);
    return insertContainerRedeploy(trx, {
      id: newId(),
      source,
      triggerSource: kind,
      description: `${verb} ${source.resource_name ?? 'the service'} to the task definition of deployment ${source.id} (${release.arn})`,
      data,
    });
  });

  try {
    const ecs = await ecsClientAs(aws, { roleArn: account.role_arn, externalId: account.external_id, sessionName: `plinth-${redeploy.id}` }, service.region);
    try {
      const definition =
        release.definition ??
        (await awsCall('ECS DescribeTaskDefinition', () => ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: release.arn })))).taskDefinition;
      if (!definition) throw notReplayable(source, `ECS does not describe ${release.arn}`);
      // What was read is kept with the source: a later replay needs no AWS to know it.
      if (!release.definition) await keepTaskDefinition(db, source.id, definition as Record<string, unknown>);
      const input = Object.fromEntries(
        REGISTRABLE.flatMap((k) => ((definition as Record<string, unknown>)[k] !== undefined ? [[k, (definition as Record<string, unknown>)[k]]] : [])),
      );
      const registered = (
        await awsCall('ECS RegisterTaskDefinition', () => ecs.send(new RegisterTaskDefinitionCommand(input as unknown as RegisterTaskDefinitionCommandInput)))
      ).taskDefinition;
      if (!registered?.taskDefinitionArn) throw new AppError(502, 'Aws:Request:FAILED', 'ECS registered the task definition without naming it');
      const updated = await awsCall('ECS UpdateService', () =>
        ecs.send(
          new UpdateServiceCommand({ cluster: stored.clusterArn || undefined, service: stored.serviceArn, taskDefinition: registered.taskDefinitionArn }),
        ),
      );
      const primary = updated.service?.deployments?.find((d) => d.status === 'PRIMARY') ?? updated.service?.deployments?.[0];
      if (!primary?.id) throw new AppError(502, 'Aws:Request:FAILED', 'ECS updated the service without naming its new deployment');
      const previous = await findPreviousTaskDefinition(db, source.module_instance_id, redeploy);
      const deployed: ContainerServiceData = {
        ...data,
        deployedTaskDefinition: { arn: registered.taskDefinitionArn, revision: registered.revision ?? 0, definition: definition as Record<string, unknown> },
        ...(previous?.definition ? { previousTaskDefinition: previous.definition } : {}),
      };
      const deploymentId = await nameExternalDeployment(db, redeploy, primary.id!, deployed);
      return rowToDeployment((await findDeployment(db, principal.organizationId, deploymentId))!);
    } finally {
      ecs.destroy();
    }
  } catch (error) {
    const body = error instanceof AppError ? { code: error.code, message: error.message } : { code: 'Aws:Request:FAILED', message: String(error) };
    await failDeployment(db, redeploy.id, body);
    throw error;
  }
}
