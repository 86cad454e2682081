import { sql, type Selectable } from 'kysely';
import type { DeploymentResourcesTable, DeploymentsTable } from '../platform/db/database.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { isUniqueViolation } from '../platform/db/db-errors.ts';
import type { DeploymentStatus, DeploymentTriggerSource } from '../platform/db/enums.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { ContainerDeploymentState } from './deployment-state.ts';
import type { LogStream } from './log-streams.ts';
import type { ContainerServiceData, Deployment, DeploymentListQuery, DeploymentResource, TargetGroupSnapshot } from './deployments.schema.ts';

type ServiceDeploymentState = NonNullable<ContainerServiceData['serviceDeploymentState']>;

export type DeploymentRow = Selectable<DeploymentsTable>;
export type DeploymentResourceRow = Selectable<DeploymentResourcesTable>;

const iso = (d: Date | null) => (d ? { value: d } : undefined);

export function rowToDeployment(row: DeploymentRow): Deployment {
  const optional: Record<string, unknown> = {
    startedAt: iso(row.started_at)?.value,
    completedAt: iso(row.completed_at)?.value,
    data: row.data ? withoutEnvironmentValues(row.data as Record<string, unknown>) : undefined,
    error: row.error ?? undefined,
    cloudAccountId: row.cloud_account_id ?? undefined,
    externalDeploymentId: row.external_deployment_id ?? undefined,
    pipelineRunId: row.pipeline_run_id ?? undefined,
    redeployOfDeploymentId: row.redeploy_of_deployment_id ?? undefined,
    rollbackToDeploymentId: row.rollback_to_deployment_id ?? undefined,
    resourceArn: row.resource_arn ?? undefined,
    resourceName: row.resource_name ?? undefined,
  };
  return {
    id: row.id,
    organizationId: row.organization_id,
    projectId: row.project_id,
    environmentId: row.environment_id,
    moduleInstanceId: row.module_instance_id,
    deploymentType: row.deployment_type,
    status: row.status,
    description: row.description,
    triggerSource: row.trigger_source,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  } as Deployment;
}

/**
 * A task definition's containers' environment values often hold secrets: a deployment shows their names,
 * never their values (the definition kept for a redeploy has them).
 */
function withoutEnvironmentValues(data: Record<string, unknown>): Record<string, unknown> {
  const redact = (ref: unknown) => {
    const definition = (ref as { definition?: { containerDefinitions?: unknown } } | undefined)?.definition;
    if (!definition || !Array.isArray(definition.containerDefinitions)) return ref;
    const containerDefinitions = definition.containerDefinitions.map((c: Record<string, unknown>) =>
      Array.isArray(c?.environment) ? { ...c, environment: c.environment.map((e: { name?: unknown }) => ({ name: e?.name, value: '(sensitive)' })) } : c,
    );
    return { ...(ref as object), definition: { ...definition, containerDefinitions } };
  };
  if (!('deployedTaskDefinition' in data) && !('previousTaskDefinition' in data)) return data;
  return {
    ...data,
    ...(data.deployedTaskDefinition ? { deployedTaskDefinition: redact(data.deployedTaskDefinition) } : {}),
    ...(data.previousTaskDefinition ? { previousTaskDefinition: redact(data.previousTaskDefinition) } : {}),
  };
}

export function rowToResource(row: DeploymentResourceRow): DeploymentResource {
  const optional: Record<string, unknown> = {
    cloudAccountId: row.cloud_account_id ?? undefined,
    moduleInstanceId: row.module_instance_id ?? undefined,
    lastStatus: row.last_status ?? undefined,
    desiredStatus: row.desired_status ?? undefined,
    startedAt: row.started_at ?? undefined,
    stoppedAt: row.stopped_at ?? undefined,
    logStreams: row.log_streams ?? undefined,
    error: row.error ?? undefined,
  };
  return {
    id: row.id,
    moduleDeploymentId: row.deployment_id,
    externalId: row.external_id,
    data: row.data,
    firstSeenAt: row.first_seen_at,
    lastEventAt: row.last_event_at,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  } as DeploymentResource;
}

export function findDeploymentsPage(db: Executor, organizationId: string, page: PageRequest, filter: Omit<DeploymentListQuery, 'cursor' | 'limit' | 'order'>) {
  return db
    .selectFrom('deployments')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .$if(filter.moduleInstanceId !== undefined, (q) => q.where('module_instance_id', '=', filter.moduleInstanceId!))
    .$if(filter.environmentId !== undefined, (q) => q.where('environment_id', '=', filter.environmentId!))
    .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!))
    .$if(filter.deploymentType !== undefined, (q) => q.where('deployment_type', '=', filter.deploymentType!))
    .$call(keyset(page, 'deployments.id'))
    .execute();
}

export function findDeployment(db: Executor, organizationId: string, id: string, lock = false) {
  return db
    .selectFrom('deployments')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .$if(lock, (q) => q.forUpdate())
    .executeTakeFirst();
}

export function findResourcesPage(db: Executor, deploymentId: string, page: PageRequest) {
  return db.selectFrom('deployment_resources').selectAll().where('deployment_id', '=', deploymentId).$call(keyset(page, 'deployment_resources.id')).execute();
}

export function findOrganizationResourcesPage(
  db: Executor,
  organizationId: string,
  page: PageRequest,
  filter: { deploymentId?: string; moduleInstanceId?: string },
) {
  return db
    .selectFrom('deployment_resources')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .$if(filter.deploymentId !== undefined, (q) => q.where('deployment_id', '=', filter.deploymentId!))
    .$if(filter.moduleInstanceId !== undefined, (q) => q.where('module_instance_id', '=', filter.moduleInstanceId!))
    .$call(keyset(page, 'deployment_resources.id'))
    .execute();
}

export function findResource(db: Executor, organizationId: string, id: string) {
  return db.selectFrom('deployment_resources').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

/**
 * The module instance whose stack's outputs declare one of these service ARNs, in this cluster when its
 * outputs name one (the oldest, if several do).
 */
export function findInstanceOfService(db: Executor, organizationId: string, serviceArns: string[], clusterArn: string | undefined) {
  return db
    .selectFrom('stacks as s')
    .innerJoin('module_instances as i', 'i.stack_id', 's.id')
    .select(['i.id', 'i.project_id', 'i.environment_id'])
    .where('s.organization_id', '=', organizationId)
    .where('s.module_instance_id', 'is not', null)
    .where(sql<string>`s.output ->> 'ecs_service_arn'`, 'in', serviceArns)
    .$if(clusterArn !== undefined, (q) => q.where(sql<boolean>`coalesce(s.output ->> 'ecs_cluster_arn' = ${clusterArn ?? ''}, true)`))
    .orderBy('i.id')
    .limit(1)
    .executeTakeFirst();
}

export interface InstanceOfService {
  id: string;
  project_id: string;
  environment_id: string;
}

/** The deployment ECS names `externalId` in the account; locked with `lock` (an event that changes it). */
export function findContainerDeployment(db: Executor, cloudAccountId: string, externalId: string, lock: boolean) {
  return db
    .selectFrom('deployments')
    .selectAll()
    .where('cloud_account_id', '=', cloudAccountId)
    .where('external_deployment_id', '=', externalId)
    .$if(lock, (q) => q.forUpdate())
    .executeTakeFirst();
}

/**
 * createContainerDeployment records the deployment ECS names `externalId` in the account (as `initial`)
 * and returns it, locked with `lock`. Two first events of one deployment arriving at once both end on
 * the same row: the insert that loses waits, then does nothing. Undefined when the row is gone already:
 * its instance was deleted between the two statements.
 */
export async function createContainerDeployment(
  db: Executor,
  v: {
    id: string;
    organizationId: string;
    cloudAccountId: string;
    instance: InstanceOfService;
    externalId: string;
    serviceArn: string;
    initial: ContainerDeploymentState;
    startedAt: string;
    lock: boolean;
  },
): Promise<DeploymentRow | undefined> {
  await db
    .insertInto('deployments')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      project_id: v.instance.project_id,
      environment_id: v.instance.environment_id,
      module_instance_id: v.instance.id,
      deployment_type: 'CONTAINER_SERVICE',
      status: v.initial.status,
      description: `ECS deployment ${v.externalId} of ${v.serviceArn.split('/').at(-1)}`,
      trigger_source: 'EVENT_BUS',
      cloud_account_id: v.cloudAccountId,
      external_deployment_id: v.externalId,
      resource_arn: v.serviceArn,
      resource_name: v.serviceArn.split('/').at(-1) ?? v.serviceArn,
      data: JSON.stringify(v.initial.data),
      started_at: new Date(v.startedAt),
    })
    .onConflict((oc) => oc.columns(['cloud_account_id', 'external_deployment_id']).where('external_deployment_id', 'is not', null).doNothing())
    .execute();
  return findContainerDeployment(db, v.cloudAccountId, v.externalId, v.lock);
}

/**
 * recordDeployedTaskDefinition sets what a deployment deploys, once: the first of its tasks' events to
 * get here does, in one statement, and the row is locked only for that moment.
 */
export async function recordDeployedTaskDefinition(
  db: Executor,
  id: string,
  deployed: NonNullable<ContainerServiceData['deployedTaskDefinition']>,
  previous: ContainerServiceData['previousTaskDefinition'] | undefined,
): Promise<void> {
  const added = { deployedTaskDefinition: deployed, ...(previous ? { previousTaskDefinition: previous } : {}) };
  await db
    .updateTable('deployments')
    // Its definition is read from ECS by a worker process (task-definitions.ts), not here.
    .set({ data: sql`data || ${JSON.stringify(added)}::jsonb`, definition_check_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where(sql<boolean>`not (data ? 'deployedTaskDefinition')`)
    .execute();
}

export function containerStateOf(row: DeploymentRow): ContainerDeploymentState {
  return {
    status: row.status,
    lastEventAt: row.last_event_at ? row.last_event_at.toISOString() : null,
    data: row.data as unknown as ContainerServiceData,
    completedAt: row.completed_at ? row.completed_at.toISOString() : null,
    error: (row.error as ContainerDeploymentState['error']) ?? null,
  };
}

/** writeContainerState writes what events made of the deployment; `readService` makes its service deployment due to be read from ECS. */
export async function writeContainerState(db: Executor, id: string, state: ContainerDeploymentState, readService = false): Promise<void> {
  await db
    .updateTable('deployments')
    .set({
      ...(readService ? { service_check_at: sql<Date>`now()`, service_check_attempts: 0 } : {}),
      status: state.status,
      last_event_at: state.lastEventAt ? new Date(state.lastEventAt) : null,
      data: JSON.stringify(state.data),
      completed_at: state.completedAt ? new Date(state.completedAt) : null,
      error: state.error ? JSON.stringify(state.error) : null,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .execute();
}

/** The newest container deployment of a service (what a service action is about), locked. */
export function lockNewestDeploymentOfService(db: Executor, cloudAccountId: string, serviceArn: string) {
  return db
    .selectFrom('deployments')
    .selectAll()
    .where('cloud_account_id', '=', cloudAccountId)
    .where('resource_arn', '=', serviceArn)
    .where('deployment_type', '=', 'CONTAINER_SERVICE')
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .forUpdate()
    .executeTakeFirst();
}

/** The task definition the service ran before this deployment: the deployed one of its previous deployment. */
export function findPreviousTaskDefinition(db: Executor, moduleInstanceId: string, before: DeploymentRow) {
  return db
    .selectFrom('deployments')
    .select(sql<ContainerServiceData['deployedTaskDefinition'] | null>`data -> 'deployedTaskDefinition'`.as('definition'))
    .where('module_instance_id', '=', moduleInstanceId)
    .where('deployment_type', '=', 'CONTAINER_SERVICE')
    .where('resource_arn', '=', before.resource_arn)
    .where('id', '!=', before.id)
    .where(sql<boolean>`data ? 'deployedTaskDefinition'`)
    .where('started_at', '<=', before.started_at)
    .orderBy('started_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export interface TaskWrite {
  id: string;
  organizationId: string;
  deploymentId: string;
  moduleInstanceId: string;
  cloudAccountId: string;
  externalId: string;
  sequence: number;
  lastStatus: string | null;
  desiredStatus: string | null;
  data: Record<string, unknown>;
  error: { code: string; message: string } | null;
  startedAt: string | null;
  stoppedAt: string | null;
  eventAt: string;
  /** Known once the deployment's task definition is: then from the first event of the task on. */
  logStreams: LogStream[] | null;
}

/**
 * upsertTask writes a task as its event describes it, unless a newer event of the task was written
 * already (undefined then). What an earlier event said and this one does not (the time the task was
 * pending, say) is kept.
 */
export function upsertTask(db: Executor, t: TaskWrite) {
  return db
    .insertInto('deployment_resources')
    .values({
      id: t.id,
      organization_id: t.organizationId,
      deployment_id: t.deploymentId,
      module_instance_id: t.moduleInstanceId,
      cloud_account_id: t.cloudAccountId,
      type: 'CONTAINER_TASK',
      external_id: t.externalId,
      sequence: t.sequence,
      last_status: t.lastStatus,
      desired_status: t.desiredStatus,
      data: JSON.stringify(t.data),
      error: t.error ? JSON.stringify(t.error) : null,
      started_at: t.startedAt ? new Date(t.startedAt) : null,
      stopped_at: t.stoppedAt ? new Date(t.stoppedAt) : null,
      last_event_at: new Date(t.eventAt),
      log_streams: t.logStreams ? JSON.stringify(t.logStreams) : null,
      target_check_at: t.lastStatus === 'RUNNING' && t.data.taskTargetId ? sql<Date>`now()` : null,
    })
    .onConflict((oc) =>
      oc
        .columns(['cloud_account_id', 'external_id'])
        .doUpdateSet((eb) => ({
          sequence: eb.ref('excluded.sequence'),
          last_status: eb.ref('excluded.last_status'),
          desired_status: eb.ref('excluded.desired_status'),
          data: sql`deployment_resources.data || excluded.data`,
          error: sql`coalesce(excluded.error, deployment_resources.error)`,
          started_at: sql`coalesce(excluded.started_at, deployment_resources.started_at)`,
          stopped_at: sql`coalesce(excluded.stopped_at, deployment_resources.stopped_at)`,
          log_streams: sql`coalesce(deployment_resources.log_streams, excluded.log_streams)`,
          last_event_at: eb.ref('excluded.last_event_at'),
          // Once the task runs (with an address a target group can name), how its load balancer sees it
          // is read; once it stops, no more.
          target_check_at: sql`case
            when excluded.last_status = 'RUNNING' and deployment_resources.last_status is distinct from 'RUNNING' and excluded.data ? 'taskTargetId' then now()
            when excluded.last_status in ('DEPROVISIONING', 'STOPPED') then null
            else deployment_resources.target_check_at end`,
        }))
        .where('deployment_resources.sequence', '<', (eb) => eb.ref('excluded.sequence')),
    )
    .returning('id')
    .executeTakeFirst();
}

export function insertModuleDeployment(
  db: Executor,
  v: {
    id: string;
    organizationId: string;
    projectId: string;
    environmentId: string;
    moduleInstanceId: string;
    description: string;
    triggerSource: DeploymentTriggerSource;
    pipelineRunId: string;
    data: Record<string, unknown>;
    redeployOf?: string;
    rollbackTo?: string;
  },
) {
  return db
    .insertInto('deployments')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      project_id: v.projectId,
      environment_id: v.environmentId,
      module_instance_id: v.moduleInstanceId,
      deployment_type: 'MODULE',
      status: 'IN_PROGRESS',
      description: v.description,
      trigger_source: v.triggerSource,
      pipeline_run_id: v.pipelineRunId,
      data: JSON.stringify(v.data),
      redeploy_of_deployment_id: v.redeployOf ?? null,
      rollback_to_deployment_id: v.rollbackTo ?? null,
      started_at: sql<Date>`now()`,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** finishModuleDeployment ends the deployment of a run as the run ended (a retried run's, as its retry ended). */
export async function finishModuleDeployment(db: Executor, runId: string, status: DeploymentStatus, error: Record<string, unknown> | null): Promise<void> {
  await db
    .updateTable('deployments')
    .set({ status, error: error ? JSON.stringify(error) : null, completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('pipeline_run_id', '=', runId)
    .execute();
}

/**
 * An unfinished deployment of the instance, if there is one (what a redeploy would overlap): a module
 * deploy whose run is queued or running (a retried one included), or the newest container deployment of
 * a service while ECS has not said it ended. An older one that ECS never ended (a newer deployment
 * replaced it) does not count, nor a redeploy whose process died before ECS named its deployment.
 */
export function findDeploymentInProgress(db: Executor, moduleInstanceId: string) {
  return db
    .selectFrom('deployments as d')
    .leftJoin('pipeline_runs as r', 'r.id', 'd.pipeline_run_id')
    .select(['d.id', 'd.deployment_type'])
    .where('d.module_instance_id', '=', moduleInstanceId)
    .where((eb) =>
      eb.or([
        eb.and([eb('d.deployment_type', '=', 'MODULE'), eb('r.status', 'in', ['QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL'])]),
        eb.and([
          eb('d.deployment_type', '=', 'CONTAINER_SERVICE'),
          eb('d.status', '=', 'IN_PROGRESS'),
          eb.or([eb('d.external_deployment_id', 'is not', null), eb('d.created_at', '>', sql<Date>`now() - interval '15 minutes'`)]),
          eb.not(
            eb.exists(
              eb
                .selectFrom('deployments as newer')
                .select('newer.id')
                .whereRef('newer.module_instance_id', '=', 'd.module_instance_id')
                .whereRef('newer.resource_arn', '=', 'd.resource_arn')
                .where('newer.deployment_type', '=', 'CONTAINER_SERVICE')
                .whereRef('newer.started_at', '>', 'd.started_at'),
            ),
          ),
        ]),
      ]),
    )
    .limit(1)
    .executeTakeFirst();
}

/** A container redeploy, recorded before AWS is asked (ECS names its deployment only once it starts). */
export function insertContainerRedeploy(
  db: Executor,
  v: {
    id: string;
    source: DeploymentRow;
    triggerSource: 'REDEPLOY' | 'ROLLBACK';
    description: string;
    data: ContainerServiceData;
  },
) {
  return db
    .insertInto('deployments')
    .values({
      id: v.id,
      organization_id: v.source.organization_id,
      project_id: v.source.project_id,
      environment_id: v.source.environment_id,
      module_instance_id: v.source.module_instance_id,
      deployment_type: 'CONTAINER_SERVICE',
      status: 'IN_PROGRESS',
      description: v.description,
      trigger_source: v.triggerSource,
      cloud_account_id: v.source.cloud_account_id,
      resource_arn: v.source.resource_arn,
      resource_name: v.source.resource_name,
      data: JSON.stringify(v.data),
      ...(v.triggerSource === 'ROLLBACK' ? { rollback_to_deployment_id: v.source.id } : { redeploy_of_deployment_id: v.source.id }),
      started_at: sql<Date>`now()`,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** failDeployment ends a deployment that could not start, with the reason. */
export async function failDeployment(db: Executor, id: string, error: Record<string, unknown>): Promise<void> {
  await db
    .updateTable('deployments')
    .set({ status: 'FAILED', error: JSON.stringify(error), completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .execute();
}

/** keepTaskDefinition keeps, with the deployment, the task definition it deploys as ECS described it. */
export async function keepTaskDefinition(db: Executor, id: string, definition: Record<string, unknown>): Promise<void> {
  await db
    .updateTable('deployments')
    .set({
      data: sql`jsonb_set(data, '{deployedTaskDefinition,definition}', ${JSON.stringify(definition)}::jsonb)`,
      definition_check_at: null,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where(sql<boolean>`data ? 'deployedTaskDefinition'`)
    .execute();
}

/**
 * nameExternalDeployment gives a redeploy the id ECS gave its service deployment. Should that
 * deployment's events have recorded it first, that record becomes the redeploy: it takes the redeploy's
 * origin and data, and the redeploy's own row goes. Returns the deployment's id.
 */
export async function nameExternalDeployment(db: Db, redeploy: DeploymentRow, externalId: string, data: ContainerServiceData): Promise<string> {
  try {
    // One statement: should an event's transaction be recording the same deployment, it waits for that
    // one to commit, then fails on the unique index, and the record the event made is taken over.
    await db
      .updateTable('deployments')
      .set({ external_deployment_id: externalId, data: JSON.stringify(data), updated_at: sql<Date>`now()` })
      .where('id', '=', redeploy.id)
      .execute();
    return redeploy.id;
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
  }
  return db.transaction().execute(async (trx) => {
    const seen = await trx
      .selectFrom('deployments')
      .selectAll()
      .where('cloud_account_id', '=', redeploy.cloud_account_id)
      .where('external_deployment_id', '=', externalId)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const events = (seen.data as unknown as ContainerServiceData | null)?.events ?? [];
    await trx
      .updateTable('deployments')
      .set({
        trigger_source: redeploy.trigger_source,
        description: redeploy.description,
        redeploy_of_deployment_id: redeploy.redeploy_of_deployment_id,
        rollback_to_deployment_id: redeploy.rollback_to_deployment_id,
        data: JSON.stringify({ ...(seen.data as object), ...data, events }),
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', seen.id)
      .execute();
    await trx.deleteFrom('deployments').where('id', '=', redeploy.id).execute();
    return seen.id;
  });
}

/** deferDefinition reads the task definition again later (ECS refused or could not be reached), or never. */
export async function deferDefinition(db: Executor, id: string, attempts: number, next: Date | null): Promise<void> {
  await db.updateTable('deployments').set({ definition_check_attempts: attempts, definition_check_at: next }).where('id', '=', id).execute();
}

/** The tasks of a deployment whose log streams are not known yet. */
export function findTasksWithoutLogStreams(db: Executor, deploymentId: string) {
  return db
    .selectFrom('deployment_resources')
    .select(['id', 'external_id'])
    .where('deployment_id', '=', deploymentId)
    .where('log_streams', 'is', null)
    .execute();
}

export async function setLogStreams(db: Executor, resourceId: string, streams: LogStream[]): Promise<void> {
  await db
    .updateTable('deployment_resources')
    .set({ log_streams: JSON.stringify(streams) })
    .where('id', '=', resourceId)
    .where('log_streams', 'is', null)
    .execute();
}

/** deferTarget reads the task's target again at `next` (its health checks are pending, or AWS refused), or never. */
export async function deferTarget(db: Executor, id: string, attempts: number, next: Date | null): Promise<void> {
  await db.updateTable('deployment_resources').set({ target_check_attempts: attempts, target_check_at: next }).where('id', '=', id).execute();
}

/** setTargetSnapshot keeps what the load balancer said of the task, and when to ask again (or never). */
export async function setTargetSnapshot(db: Executor, id: string, snapshot: TargetGroupSnapshot, attempts: number, next: Date | null): Promise<void> {
  await db
    .updateTable('deployment_resources')
    .set({
      data: sql`data || ${JSON.stringify({ targetGroupSnapshot: snapshot })}::jsonb`,
      target_check_attempts: attempts,
      target_check_at: next,
    })
    .where('id', '=', id)
    .execute();
}

/**
 * The schedule a worker sets once it has read a service deployment, unless an event made the deployment
 * due again meanwhile (its due time is no longer the worker's lease): that read is still to come.
 */
function serviceSchedule(lease: Date | null, attempts: number, next: Date | null) {
  const held = sql<boolean>`service_check_at is not distinct from ${lease}`;
  return {
    service_check_attempts: sql<number>`case when ${held} then ${attempts} else service_check_attempts end`,
    service_check_at: sql<Date | null>`case when ${held} then ${next}::timestamptz else service_check_at end`,
  };
}

/** deferServiceDeployment reads the service deployment again at `next`, or never (`lease`: the due time the worker's claim set). */
export async function deferServiceDeployment(db: Executor, id: string, lease: Date | null, attempts: number, next: Date | null): Promise<void> {
  await db
    .updateTable('deployments')
    .set(serviceSchedule(lease, attempts, next))
    .where('id', '=', id)
    .execute();
}

/**
 * keepServiceDeployment merges what ECS said of the service deployment into the deployment, under the
 * row's lock: what only ECS says (its ARN, strategy, revisions) is taken; the status, its reason and
 * stage are the newer observation's, this read's or an event's.
 */
export async function keepServiceDeployment(
  db: Db,
  id: string,
  state: ServiceDeploymentState & { serviceDeploymentArn: string },
  schedule: { lease: Date | null; attempts: number; next: Date | null },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('deployments').select('data').where('id', '=', id).forUpdate().executeTakeFirst();
    if (!row) return;
    const current = (row.data as ContainerServiceData).serviceDeploymentState;
    const { status, statusReason, lifecycleStage, acceptsNativeStandbyRevert, observedAt, ...onlyEcs } = state;
    const observation = {
      status,
      acceptsNativeStandbyRevert,
      observedAt,
      ...(statusReason ? { statusReason } : {}),
      ...(lifecycleStage ? { lifecycleStage } : {}),
    };
    const merged = !current || current.observedAt <= observedAt ? { ...onlyEcs, ...observation } : { ...current, ...onlyEcs };
    await trx
      .updateTable('deployments')
      .set({
        data: sql`data || ${JSON.stringify({ serviceDeploymentArn: state.serviceDeploymentArn, serviceDeploymentState: merged })}::jsonb`,
        ...serviceSchedule(schedule.lease, schedule.attempts, schedule.next),
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', id)
      .execute();
  });
}

/** The ECS service a deployment deploys to (its resource ARN), if any. */
export async function findDeploymentService(db: Executor, deploymentId: string): Promise<string | undefined> {
  const row = await db.selectFrom('deployments').select('resource_arn').where('id', '=', deploymentId).executeTakeFirst();
  return row?.resource_arn ?? undefined;
}
