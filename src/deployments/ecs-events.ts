// Reading the Amazon ECS events of EventBridge (docs/deployments.md#events), as AWS documents them:
// what a task, service deployment or service action event says, in the terms deployments are kept in.
// Pure: no database, no clock.

import type { CloudOutcomeCode } from '../platform/errors.ts';

/** The EventBridge envelope: what every event has, whatever its source. */
export interface CloudEvent {
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  region: string;
  time: string;
  resources?: string[];
  detail: Record<string, unknown>;
}

export interface TaskFacts {
  kind: 'task';
  taskArn: string;
  clusterArn: string;
  /** The service the task belongs to (from its group `service:<name>`), as a new-format ARN. */
  serviceArn?: string;
  /** The service deployment that started it (`startedBy`: ecs-svc/…). */
  deploymentId?: string;
  /** detail.version: ECS increments it with every change of the task. */
  version: number;
  lastStatus?: string;
  desiredStatus?: string;
  startedAt?: string;
  stoppedAt?: string;
  taskDefinitionArn: string;
  /** The TypeData of a CONTAINER_TASK resource. */
  data: Record<string, unknown>;
  /** Why it failed: a stop that was not asked for, or a container that exited non-zero. */
  error?: { code: CloudOutcomeCode; message: string };
}

export interface DeploymentFacts {
  kind: 'deployment';
  serviceArn: string;
  clusterArn?: string;
  deploymentId: string;
  /** SERVICE_DEPLOYMENT_IN_PROGRESS, …_COMPLETED, …_FAILED. */
  eventName: string;
  status: 'IN_PROGRESS' | 'SUCCEEDED' | 'FAILED';
  reason?: string;
  /** When ECS says it changed (detail.updatedAt, else the event's time): the deployment's order. */
  at: string;
  serviceDeploymentArn?: string;
}

export interface ServiceActionFacts {
  kind: 'service-action';
  serviceArn: string;
  clusterArn?: string;
  eventName: string;
  eventType?: string;
  at: string;
  desiredCount?: number;
  reason?: string;
}

export type EcsFacts = TaskFacts | DeploymentFacts | ServiceActionFacts;

const DEPLOYMENT_STATUS: Record<string, DeploymentFacts['status']> = {
  SERVICE_DEPLOYMENT_IN_PROGRESS: 'IN_PROGRESS',
  SERVICE_DEPLOYMENT_COMPLETED: 'SUCCEEDED',
  SERVICE_DEPLOYMENT_FAILED: 'FAILED',
};

/** Stops that someone or the scheduler asked for (a scale-in, a newer deployment): not failures. */
const EXPECTED_STOPS = new Set(['UserInitiated', 'ServiceSchedulerInitiated']);

/** Longer than any ARN, name or reason ECS sends: a longer string is not read (nor matched by a pattern). */
const MAX_STRING = 2048;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 && v.length <= MAX_STRING ? v : undefined);
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined);
const time = (v: unknown): string | undefined => isoTime(v);

/**
 * isoTime is an ISO 8601 time as AWS writes them, normalised to UTC, or undefined for anything else: a
 * leap second, a year before 1970 or after 9999 (neither of which PostgreSQL or Date would take).
 */
export function isoTime(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length > 64 || !ISO_TIME.test(v)) return undefined;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) return undefined;
  const year = new Date(ms).getUTCFullYear();
  return year >= 1970 && year <= 9999 ? new Date(ms).toISOString() : undefined;
}

/** The parts of an ECS ARN: `arn:aws:ecs:<region>:<account>:<type>/<path>`. */
export function parseEcsArn(arn: string): { partition: string; region: string; account: string; type: string; path: string[] } | undefined {
  const m = /^arn:(aws[a-z-]*):ecs:([a-z0-9-]+):(\d+):([a-z-]+)\/(.+)$/.exec(arn);
  return m ? { partition: m[1], region: m[2], account: m[3], type: m[4], path: m[5].split('/') } : undefined;
}

/** The cluster of a service ARN of the new format (`service/<cluster>/<service>`); the old one does not name it. */
export function clusterOfService(serviceArn: string): string | undefined {
  const arn = parseEcsArn(serviceArn);
  if (arn?.type !== 'service' || arn.path.length !== 2) return undefined;
  return `arn:${arn.partition}:ecs:${arn.region}:${arn.account}:cluster/${arn.path[0]}`;
}

/** The service ARN of a task in `clusterArn` whose group is `service:<name>`. */
export function serviceOfTask(clusterArn: string, group: string | undefined): string | undefined {
  const cluster = parseEcsArn(clusterArn);
  if (cluster?.type !== 'cluster' || !group?.startsWith('service:')) return undefined;
  return `arn:${cluster.partition}:ecs:${cluster.region}:${cluster.account}:service/${cluster.path[0]}/${group.slice('service:'.length)}`;
}

/** readEcsEvent says what an event tells about ECS, or undefined for one Plinth does not read. */
export function readEcsEvent(event: CloudEvent): EcsFacts | undefined {
  if (event.source !== 'aws.ecs') return undefined;
  switch (event['detail-type']) {
    case 'ECS Task State Change':
      return readTask(event);
    case 'ECS Deployment State Change':
      return readDeployment(event);
    case 'ECS Service Action':
      return readServiceAction(event);
    default:
      return undefined;
  }
}

function readTask(event: CloudEvent): TaskFacts | undefined {
  const d = event.detail;
  const taskArn = str(d.taskArn);
  const clusterArn = str(d.clusterArn);
  const taskDefinitionArn = str(d.taskDefinitionArn);
  const version = int(d.version);
  if (!taskArn || !clusterArn || !taskDefinitionArn || version === undefined) return undefined;
  const startedBy = str(d.startedBy);
  const family = /task-definition\/([^:]+):(\d+)$/.exec(taskDefinitionArn);
  const containers = Array.isArray(d.containers) ? d.containers.filter((c): c is Record<string, unknown> => typeof c === 'object' && c !== null) : [];
  const exitCodes = containers.flatMap((c) => (int(c.exitCode) !== undefined ? [{ name: str(c.name), exitCode: int(c.exitCode)! }] : []));
  const data: Record<string, unknown> = {
    type: 'CONTAINER_TASK',
    clusterArn,
    taskArn,
    taskDefinitionArn,
    ...pick(d, [
      'availabilityZone',
      'capacityProviderName',
      'connectivity',
      'containerInstanceArn',
      'healthStatus',
      'launchType',
      'platformVersion',
      'startedBy',
      'stopCode',
      'stoppedReason',
    ]),
    ...pickTimes(d, ['pullStartedAt', 'pullStoppedAt']),
    ...(str(d.group) ? { taskGroup: str(d.group) } : {}),
    ...(eniAddress(d.attachments) ? { taskTargetId: eniAddress(d.attachments) } : {}),
    ...(family ? { taskDefinitionFamily: family[1], taskDefinitionRevision: Number(family[2]) } : {}),
    ...(exitCodes.length > 0
      ? { exitCode: exitCodes.find((c) => c.exitCode !== 0)?.exitCode ?? 0, containers: containerStates(containers) }
      : containers.length > 0
        ? { containers: containerStates(containers) }
        : {}),
  };
  // ECS names the moments of a task's life by status: when each was first seen.
  const at = time(d.updatedAt) ?? time(event.time);
  const lastStatus = str(d.lastStatus);
  if (lastStatus && at) {
    const moment = { PROVISIONING: 'provisioningAt', PENDING: 'pendingAt', RUNNING: 'runningAt', DEPROVISIONING: 'deprovisioningAt' }[lastStatus];
    if (moment) data[moment] = lastStatus === 'RUNNING' ? (time(d.startedAt) ?? at) : at;
  }
  const failedContainer = exitCodes.find((c) => c.exitCode !== 0);
  const error: TaskFacts['error'] =
    lastStatus === 'STOPPED' && failedContainer
      ? { code: 'Ecs:Task:CONTAINER_EXITED', message: `Container ${failedContainer.name ?? '?'} exited with code ${failedContainer.exitCode}` }
      : lastStatus === 'STOPPED' && str(d.stopCode) && !EXPECTED_STOPS.has(str(d.stopCode)!)
        ? { code: 'Ecs:Task:STOPPED', message: `${str(d.stopCode)}: ${str(d.stoppedReason) ?? 'the task stopped'}` }
        : undefined;
  return {
    kind: 'task',
    taskArn,
    clusterArn,
    serviceArn: serviceOfTask(clusterArn, str(d.group)),
    deploymentId: startedBy?.startsWith('ecs-svc/') ? startedBy : undefined,
    version,
    lastStatus,
    desiredStatus: str(d.desiredStatus),
    startedAt: time(d.startedAt),
    stoppedAt: time(d.stoppedAt),
    taskDefinitionArn,
    data,
    ...(error ? { error } : {}),
  };
}

/**
 * The private address of the task's network interface (awsvpc: Fargate, and EC2 in awsvpc mode): what a
 * target group of type `ip` registers the task by.
 */
function eniAddress(attachments: unknown): string | undefined {
  if (!Array.isArray(attachments)) return undefined;
  for (const attachment of attachments) {
    if (attachment?.type !== 'eni' || !Array.isArray(attachment.details)) continue;
    const address = attachment.details.find((d: { name?: unknown }) => d?.name === 'privateIPv4Address');
    if (typeof address?.value === 'string') return address.value;
  }
  return undefined;
}

function containerStates(containers: Record<string, unknown>[]) {
  return containers.map((c) => ({
    ...pick(c, ['name', 'lastStatus', 'reason', 'healthStatus']),
    ...(int(c.exitCode) !== undefined ? { exitCode: int(c.exitCode) } : {}),
  }));
}

function readDeployment(event: CloudEvent): DeploymentFacts | undefined {
  const d = event.detail;
  const serviceArn = event.resources?.find((r) => parseEcsArn(r)?.type === 'service');
  const deploymentId = str(d.deploymentId);
  const eventName = str(d.eventName);
  const status = eventName ? DEPLOYMENT_STATUS[eventName] : undefined;
  const at = time(d.updatedAt) ?? time(event.time);
  if (!serviceArn || !deploymentId || !eventName || !status || !at) return undefined;
  return {
    kind: 'deployment',
    serviceArn,
    clusterArn: clusterOfService(serviceArn),
    deploymentId,
    eventName,
    status,
    reason: str(d.reason),
    at,
    serviceDeploymentArn: str(d.serviceDeploymentArn),
  };
}

function readServiceAction(event: CloudEvent): ServiceActionFacts | undefined {
  const d = event.detail;
  const serviceArn = event.resources?.find((r) => parseEcsArn(r)?.type === 'service');
  const eventName = str(d.eventName);
  const at = time(d.createdAt) ?? time(event.time);
  if (!serviceArn || !eventName || !at) return undefined;
  return {
    kind: 'service-action',
    serviceArn,
    clusterArn: str(d.clusterArn) ?? clusterOfService(serviceArn),
    eventName,
    eventType: str(d.eventType),
    at,
    desiredCount: int(d.desiredCount),
    reason: str(d.reason),
  };
}

function pick(from: Record<string, unknown>, keys: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of keys) {
    const v = str(from[key]);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function pickTimes(from: Record<string, unknown>, keys: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of keys) {
    const v = time(from[key]);
    if (v !== undefined) out[key] = v;
  }
  return out;
}
