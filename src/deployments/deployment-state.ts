// How a container-service deployment changes with each ECS event about it (docs/deployments.md#events).
// Events arrive late and out of order: the status follows the newest event by ECS's own time, and every
// event takes its place in the progress history by that time. Pure: no database, no clock.

import type { DeploymentStatus } from '../platform/db/enums.ts';
import type { CloudOutcomeCode } from '../platform/errors.ts';
import type { ContainerServiceData, DeploymentProgress } from './deployments.schema.ts';
import type { DeploymentFacts, ServiceActionFacts } from './ecs-events.ts';

/** A deployment's progress: started (1 of 2), then completed or failed (2 of 2). */
const TOTAL_STEPS = 2;

/** The service deployment status ECS reports for each deployment event. */
const SERVICE_DEPLOYMENT_STATUS: Record<DeploymentFacts['status'], string> = { IN_PROGRESS: 'IN_PROGRESS', SUCCEEDED: 'SUCCESSFUL', FAILED: 'FAILED' };

/** How much history a deployment keeps: a service flapping for days would otherwise grow it without end. */
export const MAX_PROGRESS_ENTRIES = 100;

export interface ContainerDeploymentState {
  status: DeploymentStatus;
  lastEventAt: string | null;
  data: ContainerServiceData;
  completedAt: string | null;
  error: { code: CloudOutcomeCode; message: string } | null;
}

/** The state a deployment first seen in an event starts from. */
export function newContainerDeployment(serviceArn: string, clusterArn: string | undefined): ContainerDeploymentState {
  return {
    status: 'IN_PROGRESS',
    lastEventAt: null,
    data: { type: 'cloud:container-service', clusterArn: clusterArn ?? '', serviceArn, detectedVia: 'EVENT_BUS', triggerChannel: 'EVENT_BUS', events: [] },
    completedAt: null,
    error: null,
  };
}

/** withProgress adds an entry to the history in the order of its time (the same entry twice is kept once). */
function withProgress(events: DeploymentProgress[] | undefined, entry: DeploymentProgress): DeploymentProgress[] {
  const list = events ?? [];
  if (list.some((e) => e.startedAt === entry.startedAt && e.message === entry.message)) return list;
  const next = [...list, entry].sort((a, b) => String(a.startedAt).localeCompare(String(b.startedAt)));
  return next.slice(-MAX_PROGRESS_ENTRIES);
}

/**
 * applyDeploymentEvent folds a deployment state change into the deployment. `stale` says the event is
 * older than the newest one applied: it joins the history, and the status stays.
 */
export function applyDeploymentEvent(current: ContainerDeploymentState, facts: DeploymentFacts): { next: ContainerDeploymentState; stale: boolean } {
  const step = facts.status === 'IN_PROGRESS' ? 1 : TOTAL_STEPS;
  const events = withProgress(current.data.events, {
    currentStep: step,
    totalSteps: TOTAL_STEPS,
    startedAt: facts.at,
    message: facts.reason ?? facts.eventName,
  });
  const stale = current.lastEventAt !== null && facts.at < current.lastEventAt;
  if (stale) return { next: { ...current, data: { ...current.data, events } }, stale };
  const data: ContainerServiceData = {
    ...current.data,
    clusterArn: current.data.clusterArn || (facts.clusterArn ?? ''),
    events,
    ...(facts.serviceDeploymentArn ? { serviceDeploymentArn: facts.serviceDeploymentArn } : {}),
    serviceDeploymentState: serviceStateAfter(current.data, facts),
  };
  const done = facts.status !== 'IN_PROGRESS';
  return {
    next: {
      status: facts.status,
      lastEventAt: facts.at,
      data,
      completedAt: done ? facts.at : null,
      error: facts.status === 'FAILED' ? { code: 'Ecs:Deployment:FAILED', message: facts.reason ?? 'The service deployment failed' } : null,
    },
    stale: false,
  };
}

type ServiceDeploymentState = NonNullable<ContainerServiceData['serviceDeploymentState']>;

/**
 * The service deployment state after a deployment event: what only ECS says (revisions, strategy) stays,
 * and the status, its reason and stage are the newer observation's, this event's or an earlier read
 * of ECS's (by ECS's own time).
 */
function serviceStateAfter(data: ContainerServiceData, facts: DeploymentFacts): ServiceDeploymentState {
  const current = data.serviceDeploymentState;
  const arn = facts.serviceDeploymentArn ?? data.serviceDeploymentArn;
  if (current && current.observedAt > facts.at) return { ...current, ...(arn ? { serviceDeploymentArn: arn } : {}) };
  const { statusReason: _reason, lifecycleStage: _stage, ...lasting } = current ?? {};
  return {
    ...lasting,
    acceptsNativeStandbyRevert: facts.status === 'IN_PROGRESS' && current?.acceptsNativeStandbyRevert === true,
    observedAt: facts.at,
    status: SERVICE_DEPLOYMENT_STATUS[facts.status],
    ...(arn ? { serviceDeploymentArn: arn } : {}),
    ...(facts.reason ? { statusReason: facts.reason } : {}),
  };
}

/** applyServiceAction records a service action (steady state, a task that cannot start, …) in the history. */
export function applyServiceAction(current: ContainerDeploymentState, facts: ServiceActionFacts): ContainerDeploymentState {
  const step = current.status === 'IN_PROGRESS' ? 1 : TOTAL_STEPS;
  const entry: DeploymentProgress = {
    currentStep: step,
    totalSteps: TOTAL_STEPS,
    startedAt: facts.at,
    message: facts.reason ? `${facts.eventName}: ${facts.reason}` : facts.eventName,
    ...(facts.desiredCount !== undefined ? { desiredCount: facts.desiredCount } : {}),
  };
  return { ...current, data: { ...current.data, events: withProgress(current.data.events, entry) } };
}
