// Cloud events in (docs/deployments.md#events): each event of a cloud account is applied to the
// deployment or task it is about and stored once, in one transaction that locks only that record.

import type { CloudAccountRow } from '../cloud-accounts/cloud-accounts.repo.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { isDeadlock, isForeignKeyViolation } from '../platform/db/db-errors.ts';
import type { DomainConfig } from '../platform/domain-config.ts';
import { applyAcmEvent, isAcmEvent } from '../domains/acm-events.ts';
import { logStreamsOf } from './log-streams.ts';
import type { CloudEventOutcome } from '../platform/db/enums.ts';
import { newId } from '../platform/ids.ts';
import { applyDeploymentEvent, applyServiceAction, newContainerDeployment, type ContainerDeploymentState } from './deployment-state.ts';
import { findCloudEvent, insertCloudEvent } from './cloud-events.repo.ts';
import {
  containerStateOf,
  findInstanceOfService,
  findPreviousTaskDefinition,
  createContainerDeployment,
  findContainerDeployment,
  lockNewestDeploymentOfService,
  recordDeployedTaskDefinition,
  upsertTask,
  writeContainerState,
  type DeploymentRow,
  type InstanceOfService,
} from './deployments.repo.ts';
import { clusterOfService, parseEcsArn, readEcsEvent, type CloudEvent, type DeploymentFacts, type ServiceActionFacts, type TaskFacts } from './ecs-events.ts';

export interface IngestResult {
  /** Plinth's id of the stored event. */
  id: string;
  eventId: string;
  outcome: CloudEventOutcome;
  /** The event was received before: nothing was done again. */
  duplicate: boolean;
  deploymentId?: string;
}

interface Applied {
  outcome: CloudEventOutcome;
  resourceArn?: string;
  deploymentId?: string;
}

/** How many times an event is applied at most, when what it met changed under it. */
const ATTEMPTS = 3;

/**
 * ingestCloudEvent applies an event of the account and stores it with what applying it did. It is
 * applied again when what it met changed under it: the instance it is about deleted meanwhile (its row
 * gone under the insert: the next attempt finds no instance), or a deletion of the cloud account or of
 * an instance that took the same rows in the other order (PostgreSQL aborts one of the two).
 */
export async function ingestCloudEvent(db: Db, domains: DomainConfig, account: CloudAccountRow, event: CloudEvent): Promise<IngestResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ingestOnce(db, domains, account, event);
    } catch (error) {
      if (attempt === ATTEMPTS || !(isForeignKeyViolation(error) || isDeadlock(error))) throw error;
    }
  }
}

/** Thrown to undo what a redelivered event applied: it was applied when first received. */
const REDELIVERED = new Error('the event was received before');

/**
 * ingestOnce applies the event first and stores it last, so that a new event (nearly every one) costs a
 * single write of its row. A redelivery finds its id taken when it stores it, and what it applied is
 * rolled back: the first delivery's outcome stands. Two deliveries at once take the same row locks in
 * the same order, so the later one waits for the first to commit, then finds its id taken.
 */
async function ingestOnce(db: Db, domains: DomainConfig, account: CloudAccountRow, event: CloudEvent): Promise<IngestResult> {
  try {
    return await db.transaction().execute(async (trx) => {
      const applied = await apply(trx, domains, account, event);
      const id = await insertCloudEvent(trx, { id: newId(), organizationId: account.organization_id, cloudAccountId: account.id, event, ...applied });
      if (!id) throw REDELIVERED;
      return { id, eventId: event.id, outcome: applied.outcome, duplicate: false, ...(applied.deploymentId ? { deploymentId: applied.deploymentId } : {}) };
    });
  } catch (error) {
    if (error !== REDELIVERED) throw error;
    const before = await findCloudEvent(db, account.id, event.id);
    return {
      id: before!.id,
      eventId: event.id,
      outcome: before!.outcome,
      duplicate: true,
      ...(before?.deployment_id ? { deploymentId: before.deployment_id } : {}),
    };
  }
}

async function apply(trx: Executor, domains: DomainConfig, account: CloudAccountRow, event: CloudEvent): Promise<Applied> {
  if (isAcmEvent(event)) {
    if (event.account !== account.account_id) return { outcome: 'UNMATCHED' };
    const acm = await applyAcmEvent(trx, domains, account, event);
    return { outcome: acm.matched ? 'APPLIED' : 'UNMATCHED', ...(acm.arn ? { resourceArn: acm.arn } : {}) };
  }
  const facts = readEcsEvent(event);
  if (!facts) return { outcome: 'UNKNOWN' };
  // An event of another AWS account, or about a resource of one, is not this account's to apply,
  // whoever holds its secret.
  const resource = facts.kind === 'task' ? facts.clusterArn : facts.serviceArn;
  if (event.account !== account.account_id || parseEcsArn(resource)?.account !== account.account_id) return { outcome: 'UNMATCHED' };
  if (facts.kind === 'task') return applyTask(trx, account, facts, event.time);
  if (facts.kind === 'deployment') return applyDeployment(trx, account, facts);
  return applyAction(trx, account, facts);
}

/** The instance whose stack declares the service (by its ARN in either of ECS's formats). */
async function instanceOf(trx: Executor, account: CloudAccountRow, serviceArn: string, clusterArn: string | undefined): Promise<InstanceOfService | undefined> {
  const name = serviceArn.split('/').at(-1)!;
  // The old ARN format (service/<name>) does not name the cluster: a stack may output either.
  const oldFormat = serviceArn.replace(/:service\/.+$/, `:service/${name}`);
  return findInstanceOfService(trx, account.organization_id, [...new Set([serviceArn, oldFormat])], clusterArn);
}

interface DeploymentNamed {
  /** ECS's id of the service deployment. */
  externalId: string;
  serviceArn: string;
  /** The cluster the event names, if it names one. */
  clusterArn: string | undefined;
  /** The deployment as the event's first, should it be. */
  initial: ContainerDeploymentState;
  startedAt: string;
  /** The event changes the deployment (a task event only needs its id). */
  lock: boolean;
}

/**
 * deploymentOf returns the deployment an event names, creating it when it is the first event to name
 * it, or undefined when no module instance declares its service (or the instance was deleted as the
 * deployment was created). A deployment stays with the instance
 * it was first matched to: later events are applied to it without matching the service again.
 */
async function deploymentOf(trx: Executor, account: CloudAccountRow, named: DeploymentNamed): Promise<DeploymentRow | undefined> {
  const existing = await findContainerDeployment(trx, account.id, named.externalId, named.lock);
  if (existing) return existing;
  const instance = await instanceOf(trx, account, named.serviceArn, named.clusterArn);
  if (!instance) return undefined;
  return createContainerDeployment(trx, { ...named, id: newId(), organizationId: account.organization_id, cloudAccountId: account.id, instance });
}

async function applyTask(trx: Executor, account: CloudAccountRow, facts: TaskFacts, eventTime: string): Promise<Applied> {
  const unmatched = { outcome: 'UNMATCHED' as const, resourceArn: facts.taskArn };
  // A task no service deployment started (a one-off RunTask) belongs to no deployment.
  if (!facts.serviceArn || !facts.deploymentId) return unmatched;
  const deployment = await deploymentOf(trx, account, {
    externalId: facts.deploymentId,
    serviceArn: facts.serviceArn,
    clusterArn: facts.clusterArn,
    initial: newContainerDeployment(facts.serviceArn, facts.clusterArn),
    startedAt: facts.startedAt ?? eventTime,
    // Tasks of one deployment are resources of their own: their events do not wait for each other.
    lock: false,
  });
  if (!deployment) return unmatched;
  await recordTaskDefinition(trx, deployment, facts);
  const written = await upsertTask(trx, {
    id: newId(),
    organizationId: account.organization_id,
    deploymentId: deployment.id,
    moduleInstanceId: deployment.module_instance_id,
    cloudAccountId: account.id,
    externalId: facts.taskArn,
    sequence: facts.version,
    lastStatus: facts.lastStatus ?? null,
    desiredStatus: facts.desiredStatus ?? null,
    data: facts.data,
    error: facts.error ?? null,
    startedAt: facts.startedAt ?? null,
    stoppedAt: facts.stoppedAt ?? null,
    eventAt: eventTime,
    logStreams: logStreamsOfTask(deployment, facts),
  });
  return { outcome: written ? 'APPLIED' : 'STALE', resourceArn: facts.taskArn, deploymentId: deployment.id };
}

/** A task's log streams, once the deployment's task definition has been read (and the task runs that one). */
function logStreamsOfTask(deployment: DeploymentRow, facts: TaskFacts) {
  const deployed = containerStateOf(deployment).data.deployedTaskDefinition;
  const region = parseEcsArn(facts.clusterArn)?.region;
  if (!deployed?.definition || deployed.arn !== facts.taskDefinitionArn || !region) return null;
  return logStreamsOf(deployed.definition, facts.taskArn, region);
}

/** The first task of a deployment says which task definition it deploys; the one before is the previous deployment's. */
async function recordTaskDefinition(trx: Executor, deployment: DeploymentRow, facts: TaskFacts): Promise<void> {
  if (containerStateOf(deployment).data.deployedTaskDefinition) return;
  const revision = facts.data.taskDefinitionRevision;
  const previous = await findPreviousTaskDefinition(trx, deployment.module_instance_id, deployment);
  await recordDeployedTaskDefinition(
    trx,
    deployment.id,
    { arn: facts.taskDefinitionArn, revision: typeof revision === 'number' ? revision : 0 },
    previous?.definition && previous.definition.arn !== facts.taskDefinitionArn ? previous.definition : undefined,
  );
}

async function applyDeployment(trx: Executor, account: CloudAccountRow, facts: DeploymentFacts): Promise<Applied> {
  const deployment = await deploymentOf(trx, account, {
    externalId: facts.deploymentId,
    serviceArn: facts.serviceArn,
    clusterArn: facts.clusterArn,
    initial: newContainerDeployment(facts.serviceArn, facts.clusterArn ?? clusterOfService(facts.serviceArn)),
    startedAt: facts.at,
    lock: true,
  });
  if (!deployment) return { outcome: 'UNMATCHED', resourceArn: facts.serviceArn };
  const { next, stale } = applyDeploymentEvent(containerStateOf(deployment), facts);
  // What ECS says of the service deployment beyond the event (its ARN, revisions) is read apart.
  await writeContainerState(trx, deployment.id, next, !stale);
  return { outcome: stale ? 'STALE' : 'APPLIED', resourceArn: facts.serviceArn, deploymentId: deployment.id };
}

async function applyAction(trx: Executor, account: CloudAccountRow, facts: ServiceActionFacts): Promise<Applied> {
  const deployment = await lockNewestDeploymentOfService(trx, account.id, facts.serviceArn);
  if (!deployment) return { outcome: 'UNMATCHED', resourceArn: facts.serviceArn };
  await writeContainerState(trx, deployment.id, applyServiceAction(containerStateOf(deployment), facts));
  return { outcome: 'APPLIED', resourceArn: facts.serviceArn, deploymentId: deployment.id };
}
