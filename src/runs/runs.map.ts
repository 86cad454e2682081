// Row → API mapping of runs and step executions, with the engine fields spelled out once:
// engineWorkflowId `plinth-run-<runId>` names the run's workflow in the engine; engineRunId is the
// attempt (`<runId>.<attemptEpoch>`) for a run, and the graphile-worker job that dispatched it for a
// step execution (steps the engine resolves itself, approvals and skips, carry the run's attempt).

import { isTerminalRun } from '../engine/run-state.ts';
import type { ExecutionReadRow, RunReadRow, TransitionRow } from './runs.repo.ts';
import type { PipelineRun, RunTransition, StepExecution } from './runs.schema.ts';

export function engineWorkflowIdOf(runId: string): string {
  return `plinth-run-${runId}`;
}

function attemptIdOf(runId: string, epoch: number): string {
  return `${runId}.${epoch}`;
}

function queueReasonOf(row: RunReadRow): PipelineRun['queueReason'] {
  if (isTerminalRun(row.status)) return 'FINISHED';
  if (row.status === 'RUNNING') return 'RUNNING';
  if (row.status === 'WAITING_FOR_APPROVAL') return 'WAITING_FOR_APPROVAL';
  return row.admitted_at ? 'WAITING_FOR_WORKER' : 'WAITING_FOR_STACK';
}

const REASON_TEXT: Record<PipelineRun['queueReason'], string> = {
  WAITING_FOR_STACK: 'Waiting for the stack: another run of it is not finished',
  WAITING_FOR_WORKER: 'Admitted; waiting for a worker to start its first step',
  RUNNING: 'Running',
  WAITING_FOR_APPROVAL: 'Paused until an approval step is approved or rejected',
  FINISHED: 'Finished',
};

/** Why a run waits for a stack: its own stack's run, or the stack of a producer it waits for (a module deploy). */
function waitingText(row: RunReadRow): string {
  if (row.blocking_stack_id) {
    const producer = row.blocking_module_name ? `module instance ${row.blocking_module_name}` : `stack ${row.blocking_stack_id}`;
    return `Waiting for ${producer} to finish deploying: this run consumes its outputs`;
  }
  return row.stack_active_run_id ? `Waiting for run ${row.stack_active_run_id} of stack ${row.stack_id} to finish` : REASON_TEXT.WAITING_FOR_STACK;
}

function queueStateOf(row: RunReadRow, reason: PipelineRun['queueReason']): PipelineRun['queueState'] {
  const conditionKey = queueConditionKeyOf(row);
  const waiting = reason === 'WAITING_FOR_STACK';
  const blockedByProducer = waiting && row.blocking_stack_id;
  return {
    preflightBlockedByAdmissionCondition: waiting,
    reason: waiting ? waitingText(row) : REASON_TEXT[reason],
    stackRunPreflightPending: waiting,
    conditionKey,
    ...(waiting ? { blockingEntityType: 'STACK' as const, blockingEntityId: row.blocking_stack_id ?? row.stack_id! } : {}),
    ...(blockedByProducer && row.blocking_module_instance_id
      ? { blockingModuleInstanceId: row.blocking_module_instance_id, blockingModuleName: row.blocking_module_name ?? '' }
      : {}),
    ...(row.stack_environment_id ? { environmentId: row.stack_environment_id } : {}),
    ...(row.stack_project_id ? { projectId: row.stack_project_id } : {}),
  };
}

function queueConditionKeyOf(row: RunReadRow): string {
  return row.stack_id ? `stack:${row.stack_id}` : `run:${row.id}`;
}

export function runRowToRun(row: RunReadRow): PipelineRun {
  const queueReason = queueReasonOf(row);
  return {
    id: row.id,
    organizationId: row.organization_id,
    pipelineId: row.pipeline_id,
    pipelineVersionId: row.pipeline_version_id,
    status: row.status,
    attemptEpoch: row.attempt_epoch,
    description: row.description,
    isCancellable: !isTerminalRun(row.status),
    queueConditionKey: queueConditionKeyOf(row),
    queueReason,
    queueState: queueStateOf(row, queueReason),
    engineWorkflowId: engineWorkflowIdOf(row.id),
    variantId: row.stack_id && row.action ? `${row.stack_id}:${row.action}` : row.pipeline_id,
    variantName: row.action ?? 'default',
    autoapprove: row.autoapprove,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.action ? { action: row.action } : {}),
    ...(row.stack_id ? { attachedEntityId: row.stack_id } : {}),
    ...(row.completed_at ? { completedAt: row.completed_at } : {}),
    ...(row.created_by_id ? { createdById: row.created_by_id } : {}),
    ...(row.error ? { error: row.error } : {}),
    ...(row.input ? { input: row.input } : {}),
    ...(row.last_attempt_started_at ? { lastAttemptStartedAt: row.last_attempt_started_at } : {}),
    ...(row.started_at ? { startedAt: row.started_at } : {}),
    ...(row.admitted_at ? { engineRunId: attemptIdOf(row.id, row.attempt_epoch) } : {}),
    ...(row.trigger_metadata ? { triggerMetadata: row.trigger_metadata } : {}),
    ...(row.commit_sha ? { commitSha: row.commit_sha } : {}),
    ...(row.data ? { data: row.data as PipelineRun['data'] } : {}),
  };
}

/**
 * The step types whose output is a plan: what `tofu plan` and `tofu destroy` print, and a plan step's
 * outputData, show the values of the stack's resources. Reading them takes `state:read`.
 */
const PLAN_STEP_TYPES: ReadonlySet<string> = new Set(['opentofu.plan', 'opentofu.destroy']);

export function showsPlan(stepType: string): boolean {
  return PLAN_STEP_TYPES.has(stepType);
}

/**
 * withoutPlanValues is a plan step's outputData for a reader who may not read plans: what changes
 * (counts, addresses, actions) without the attributes' values, and `attributesWithheld` to say so.
 */
export function withoutPlanValues(outputData: Record<string, unknown>): Record<string, unknown> {
  if (!Array.isArray(outputData.resourceChanges)) return outputData;
  const resourceChanges = outputData.resourceChanges.map((change) => {
    if (typeof change !== 'object' || change === null) return change;
    const { attributes: _values, ...rest } = change as Record<string, unknown>;
    return rest;
  });
  return { ...outputData, resourceChanges, attributesWithheld: true };
}

/** executionRowToExecution maps a step execution; `readsPlans` false withholds a plan's values (state:read). */
export function executionRowToExecution(row: ExecutionReadRow, readsPlans: boolean): StepExecution {
  const outputData =
    row.output_data && !readsPlans && showsPlan(row.step_type) ? withoutPlanValues(row.output_data as Record<string, unknown>) : row.output_data;
  return {
    id: row.id,
    organizationId: row.organization_id,
    pipelineRunId: row.pipeline_run_id,
    stepId: row.step_id,
    stepName: row.step_name,
    stepType: row.step_type,
    status: row.status,
    attemptEpoch: row.attempt_epoch,
    retryAttempt: row.retry_attempt,
    isLastRetry: row.is_last_retry,
    queueMetadata: {
      ...(row.engine_job_id ? { jobId: row.engine_job_id, dispatchedAt: row.dispatched_at } : {}),
      ...(row.lease_owner ? { workerId: row.lease_owner, leaseExpiresAt: row.lease_expires_at, heartbeatAt: row.heartbeat_at } : {}),
    },
    queueReason: row.queue_reason,
    engineRunId: row.engine_job_id ?? attemptIdOf(row.pipeline_run_id, row.attempt_epoch),
    engineWorkflowId: engineWorkflowIdOf(row.pipeline_run_id),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.completed_at ? { completedAt: row.completed_at } : {}),
    ...(row.started_at ? { startedAt: row.started_at } : {}),
    ...(row.error ? { error: row.error } : {}),
    ...(row.input_data ? { inputData: row.input_data } : {}),
    ...(outputData ? { outputData } : {}),
    ...(row.status_detail ? { statusDetail: row.status_detail } : {}),
    // LOCAL steps log into Plinth itself: the "group" is the engine, the stream prefix is the URL to read
    // them, and there is no cloud account or region (empty and `local`, so the four strings every step's `logs` has are all there).
    ...(row.step_type === 'script'
      ? { logs: { cloudAccountId: '', logGroupName: 'plinth-local', logStreamPrefix: `/pipeline-step-executions/${row.id}/logs`, region: 'local' } }
      : {}),
  };
}

export function transitionRowToTransition(row: TransitionRow): RunTransition {
  return {
    id: String(row.id),
    pipelineRunId: row.pipeline_run_id,
    toStatus: row.to_status,
    reason: row.reason,
    createdAt: row.created_at,
    ...(row.step_execution_id ? { stepExecutionId: row.step_execution_id } : {}),
    ...(row.from_status ? { fromStatus: row.from_status } : {}),
    ...(row.actor ? { actor: row.actor } : {}),
  };
}
