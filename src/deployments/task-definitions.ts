// Reading from ECS the task definition a container deployment deploys (docs/deployments.md#task-definitions):
// kept with the deployment for a later redeploy, and the source of its tasks' log streams. Worker
// processes do it once the first task of the deployment names the definition, apart from the event,
// which does not wait for AWS.

import { DescribeTaskDefinitionCommand } from '@aws-sdk/client-ecs';
import { findCloudAccountForIngest } from '../cloud-accounts/cloud-accounts.repo.ts';
import { awsCall, ecsClientAs } from '../platform/aws/aws-clients.ts';
import type { AwsConfig } from '../platform/aws/aws-config.ts';
import type { Db } from '../platform/db/db.ts';
import { retryAt, type DueCheck } from '../platform/due-poller.ts';
import { AppError } from '../platform/errors.ts';
import { claimDue } from '../platform/db/claim-due.ts';
import { containerStateOf, deferDefinition, findTasksWithoutLogStreams, keepTaskDefinition, setLogStreams, type DeploymentRow } from './deployments.repo.ts';
import { parseEcsArn } from './ecs-events.ts';
import { logStreamsOf } from './log-streams.ts';

const LEASE_SECONDS = 300;

export interface DefinitionDeps {
  db: Db;
  aws: AwsConfig;
}

/** The due work of container deployments: their task definitions to read. */
export function taskDefinitionChecks(deps: DefinitionDeps): DueCheck[] {
  return [
    {
      name: 'task-definition',
      claim: (db) => claimDue<DeploymentRow>(db, ['deployments', 'definition_check_at'], LEASE_SECONDS),
      run: (d: DeploymentRow) => readTaskDefinition(deps, d),
    },
  ];
}

/** readTaskDefinition reads and keeps the deployment's task definition, and gives its tasks their log streams. */
export async function readTaskDefinition(deps: DefinitionDeps, deployment: DeploymentRow): Promise<void> {
  const state = containerStateOf(deployment);
  const deployed = state.data.deployedTaskDefinition;
  const region = parseEcsArn(state.data.serviceArn)?.region;
  if (!deployed || deployed.definition || !region || !deployment.cloud_account_id)
    return deferDefinition(deps.db, deployment.id, deployment.definition_check_attempts, null);
  const account = await findCloudAccountForIngest(deps.db, deployment.cloud_account_id);
  if (!account) return deferDefinition(deps.db, deployment.id, deployment.definition_check_attempts, null);
  let definition: Record<string, unknown> | undefined;
  try {
    const ecs = await ecsClientAs(deps.aws, { roleArn: account.role_arn, externalId: account.external_id, sessionName: `plinth-${deployment.id}` }, region);
    try {
      const answer = await awsCall('ECS DescribeTaskDefinition', () => ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: deployed.arn })));
      definition = answer.taskDefinition as Record<string, unknown> | undefined;
    } finally {
      ecs.destroy();
    }
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
  }
  if (!definition) {
    const attempts = deployment.definition_check_attempts + 1;
    return deferDefinition(deps.db, deployment.id, attempts, retryAt(attempts));
  }
  await keepTaskDefinition(deps.db, deployment.id, definition);
  for (const task of await findTasksWithoutLogStreams(deps.db, deployment.id)) {
    await setLogStreams(deps.db, task.id, logStreamsOf(definition, task.external_id, region));
  }
}
