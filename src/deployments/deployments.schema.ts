import { Type, type Static } from '@sinclair/typebox';
import { DEPLOYMENT_STATUSES, DEPLOYMENT_TRIGGER_SOURCES, DEPLOYMENT_TYPES } from '../platform/db/enums.ts';
import { Id, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

const ErrorRef = Type.Unsafe<Record<string, unknown>>({ $ref: 'ErrorBody#' });

export const TaskDefinitionRef = Type.Object({
  arn: Type.String(),
  revision: Type.Integer(),
  definition: Type.Optional(
    Type.Object({}, { additionalProperties: true, description: 'The task definition as ECS describes it (what a redeploy registers again)' }),
  ),
});

export const DeploymentProgress = Type.Object({
  currentStep: Type.Integer(),
  totalSteps: Type.Integer(),
  startedAt: UtcDateTime,
  message: Type.String(),
  desiredCount: Type.Optional(Type.Integer()),
  hookId: Type.Optional(Type.String()),
  lifecycleStage: Type.Optional(Type.String()),
});
export type DeploymentProgress = Static<typeof DeploymentProgress>;

const ServiceRevision = Type.Object({
  serviceRevisionArn: Type.String(),
  requestedTaskCount: Type.Integer(),
  runningTaskCount: Type.Integer(),
  pendingTaskCount: Type.Integer(),
  requestedProductionTrafficWeight: Type.Optional(Type.Number()),
  requestedTestTrafficWeight: Type.Optional(Type.Number()),
});

export const ServiceDeploymentState = Type.Object({
  acceptsNativeStandbyRevert: Type.Boolean({
    description: 'A blue/green deployment in progress: ECS can still revert it to the revision standing by (StopServiceDeployment, ROLLBACK)',
  }),
  observedAt: UtcDateTime,
  serviceDeploymentArn: Type.Optional(Type.String({ description: "ECS's ARN of the service deployment, once read from ECS" })),
  status: Type.String({
    description: "PENDING, IN_PROGRESS, SUCCESSFUL, STOPPED, STOP_REQUESTED, ROLLBACK_*, FAILED: the newest observation's, an event's or ECS's",
  }),
  statusReason: Type.Optional(Type.String()),
  lifecycleStage: Type.Optional(Type.String()),
  strategy: Type.Optional(Type.String({ description: 'ROLLING, BLUE_GREEN, …' })),
  sourceServiceRevisions: Type.Optional(Type.Array(ServiceRevision)),
  targetServiceRevision: Type.Optional(ServiceRevision),
});

/** `data` of a container-service deployment. */
export const ContainerServiceData = Type.Object({
  type: Type.Literal('cloud:container-service'),
  clusterArn: Type.String(),
  serviceArn: Type.String(),
  detectedVia: Type.Optional(Type.Literal('EVENT_BUS')),
  serviceDeploymentArn: Type.Optional(Type.String()),
  serviceDeploymentState: Type.Optional(ServiceDeploymentState),
  deployedTaskDefinition: Type.Optional(TaskDefinitionRef),
  previousTaskDefinition: Type.Optional(TaskDefinitionRef),
  events: Type.Optional(Type.Array(DeploymentProgress)),
  triggeredBy: Type.Optional(Type.String()),
  triggerChannel: Type.Optional(Type.String()),
});
export type ContainerServiceData = Static<typeof ContainerServiceData>;

export const Deployment = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    projectId: Type.String(),
    environmentId: Type.String(),
    moduleInstanceId: Type.String(),
    deploymentType: StringEnum(DEPLOYMENT_TYPES, {
      description: 'MODULE: a deploy of the instance (a run of its stack); CONTAINER_SERVICE: an ECS service deployment',
    }),
    status: StringEnum(DEPLOYMENT_STATUSES),
    description: Type.String(),
    triggerSource: StringEnum(DEPLOYMENT_TRIGGER_SOURCES),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    startedAt: Type.Optional(UtcDateTime),
    completedAt: Type.Optional(UtcDateTime),
    data: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            'CONTAINER_SERVICE: type cloud:container-service, clusterArn, serviceArn, detectedVia, serviceDeploymentState, deployedTaskDefinition, ' +
            'previousTaskDefinition, events (progress entries: currentStep, totalSteps, startedAt, message), triggerChannel, triggeredBy. ' +
            'MODULE: kind stack, module_input, module_version_id, previous_module_input, previous_module_version_id.',
        },
      ),
    ),
    error: Type.Optional(ErrorRef),
    cloudAccountId: Type.Optional(Type.String()),
    externalDeploymentId: Type.Optional(Type.String({ description: "ECS's id of the service deployment (ecs-svc/…)" })),
    pipelineRunId: Type.Optional(Type.String()),
    redeployOfDeploymentId: Type.Optional(Type.String()),
    rollbackToDeploymentId: Type.Optional(Type.String()),
    resourceArn: Type.Optional(Type.String()),
    resourceName: Type.Optional(Type.String()),
    stepExecutionId: Type.Optional(Type.String()),
  },
  { $id: 'Deployment', title: 'Deployment' },
);
export type Deployment = Static<typeof Deployment>;

export const DeploymentListQuery = Type.Object(
  {
    ...OrderedPaginationQuery.properties,
    moduleInstanceId: Type.Optional({ ...Id, description: 'Only the deployments of this module instance' }),
    environmentId: Type.Optional({ ...Id, description: 'Only the deployments in this environment' }),
    status: Type.Optional(StringEnum(DEPLOYMENT_STATUSES)),
    deploymentType: Type.Optional(StringEnum(DEPLOYMENT_TYPES)),
  },
  { additionalProperties: false },
);
export type DeploymentListQuery = Static<typeof DeploymentListQuery>;

const Moment = Type.Optional(UtcDateTime);

/** How the service's load balancer saw the task, when worker processes last asked it (docs/deployments.md#load-balancer-targets). */
export const TargetGroupSnapshot = Type.Object({
  capturedAt: UtcDateTime,
  source: Type.Literal('event-ingest', { description: 'Captured after an ingested event said the task runs' }),
  targetGroupArn: Type.String(),
  targetGroupName: Type.Optional(Type.String()),
  taskTarget: Type.Object({
    id: Type.String({ description: 'The registration: the target id and port, `10.0.1.163:8080`' }),
    rawId: Type.String({ description: 'The target id as the load balancer has it: the task address' }),
    state: Type.String({ description: 'initial, healthy, unhealthy, unused, draining, unavailable, …' }),
    port: Type.Optional(Type.Integer()),
    reasonCode: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
  }),
  healthCheck: Type.Optional(
    Type.Object({
      port: Type.Optional(Type.String()),
      protocol: Type.Optional(Type.String()),
      path: Type.Optional(Type.String()),
      matcherSummary: Type.Optional(Type.String()),
      intervalSeconds: Type.Optional(Type.Integer()),
      timeoutSeconds: Type.Optional(Type.Integer()),
      healthyThresholdCount: Type.Optional(Type.Integer()),
      unhealthyThresholdCount: Type.Optional(Type.Integer()),
    }),
  ),
});
export type TargetGroupSnapshot = Static<typeof TargetGroupSnapshot>;

/** The TypeData of a container task. */
export const ContainerTaskData = Type.Object({
  type: Type.Literal('CONTAINER_TASK'),
  clusterArn: Type.String(),
  taskArn: Type.String(),
  taskDefinitionArn: Type.String(),
  availabilityZone: Type.Optional(Type.String()),
  capacityProviderName: Type.Optional(Type.String()),
  connectivity: Type.Optional(Type.String()),
  containerInstanceArn: Type.Optional(Type.String()),
  exitCode: Type.Optional(Type.Integer({ description: 'The first non-zero exit code of its containers, else 0' })),
  containers: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.Optional(Type.String()),
        lastStatus: Type.Optional(Type.String()),
        exitCode: Type.Optional(Type.Integer()),
        reason: Type.Optional(Type.String()),
        healthStatus: Type.Optional(Type.String()),
      }),
    ),
  ),
  healthStatus: Type.Optional(Type.String()),
  launchType: Type.Optional(Type.String()),
  platformVersion: Type.Optional(Type.String()),
  provisioningAt: Moment,
  pendingAt: Moment,
  pullStartedAt: Moment,
  pullStoppedAt: Moment,
  runningAt: Moment,
  deprovisioningAt: Moment,
  startedBy: Type.Optional(Type.String()),
  stopCode: Type.Optional(Type.String()),
  stoppedReason: Type.Optional(Type.String()),
  taskDefinitionFamily: Type.Optional(Type.String()),
  taskDefinitionRevision: Type.Optional(Type.Integer()),
  taskGroup: Type.Optional(Type.String()),
  taskTargetId: Type.Optional(Type.String({ description: 'The address of the task network interface: what a target group of type ip registers it by' })),
  targetGroupSnapshot: Type.Optional(TargetGroupSnapshot),
});

export const LogStream = Type.Object({
  containerName: Type.String(),
  logGroupName: Type.String(),
  logStreamPrefix: Type.String(),
  region: Type.String(),
  streamName: Type.String(),
});

export const DeploymentResource = Type.Object(
  {
    id: Type.String(),
    moduleDeploymentId: Type.String({ description: 'The deployment the resource belongs to' }),
    externalId: Type.String({ description: 'The task ARN' }),
    data: ContainerTaskData,
    firstSeenAt: UtcDateTime,
    lastEventAt: UtcDateTime,
    cloudAccountId: Type.Optional(Type.String()),
    moduleInstanceId: Type.Optional(Type.String()),
    lastStatus: Type.Optional(Type.String()),
    desiredStatus: Type.Optional(Type.String()),
    startedAt: Type.Optional(UtcDateTime),
    stoppedAt: Type.Optional(UtcDateTime),
    logStreams: Type.Optional(Type.Array(LogStream)),
    error: Type.Optional(ErrorRef),
  },
  { $id: 'DeploymentResource', title: 'DeploymentResource' },
);
export type DeploymentResource = Static<typeof DeploymentResource>;

export const DeploymentResourceListQuery = Type.Object(
  {
    ...OrderedPaginationQuery.properties,
    deploymentId: Type.Optional({ ...Id, description: 'Only the resources of this deployment' }),
    moduleInstanceId: Type.Optional({ ...Id, description: 'Only the resources of this module instance' }),
  },
  { additionalProperties: false },
);
export type DeploymentResourceListQuery = Static<typeof DeploymentResourceListQuery>;
