import type { Static } from '@sinclair/typebox';
import type { LogsPage, PipelineRun, StepExecution } from './runs.schema.ts';

// Examples for the OpenAPI document: a run of the stack of stacks.examples.ts, waiting at its approval.

const RUN_ID = '0196a3c7e1f07a2b9c3d4e5f60718293';

export const pipelineRunExample: Static<typeof PipelineRun> = {
  id: RUN_ID,
  organizationId: '0196a3c2e8b07c3d9f1e2a4b5c6d7e80',
  pipelineId: '0196a3c5c3d87a1b9c2d3e4f5a6b7c8d',
  pipelineVersionId: '0196a3c5c3d97c2d8e3f4a5b6c7d8e9f',
  status: 'WAITING_FOR_APPROVAL',
  action: 'apply',
  attemptEpoch: 1,
  description: 'Scale to two instances',
  isCancellable: true,
  autoapprove: false,
  attachedEntityId: '0196a3c5c3d47f2a8e1b2c3d4e5f6a7b',
  queueConditionKey: 'stack:0196a3c5c3d47f2a8e1b2c3d4e5f6a7b',
  queueReason: 'WAITING_FOR_APPROVAL',
  queueState: {
    preflightBlockedByAdmissionCondition: false,
    reason: 'The run waits for an approval',
    stackRunPreflightPending: false,
    conditionKey: 'stack:0196a3c5c3d47f2a8e1b2c3d4e5f6a7b',
  },
  engineWorkflowId: RUN_ID,
  engineRunId: RUN_ID,
  variantId: 'change',
  variantName: 'Change',
  createdById: '0196a3c2e8a17b2c8d9e0f1a2b3c4d5e',
  createdAt: '2025-05-02T09:20:11.204Z',
  startedAt: '2025-05-02T09:20:11.690Z',
  lastAttemptStartedAt: '2025-05-02T09:20:11.690Z',
  updatedAt: '2025-05-02T09:20:19.035Z',
};

const step = (stepId: string, stepName: string, stepType: string, fields: Partial<Static<typeof StepExecution>>): Static<typeof StepExecution> => ({
  id: '',
  organizationId: '0196a3c2e8b07c3d9f1e2a4b5c6d7e80',
  pipelineRunId: RUN_ID,
  stepId,
  stepName,
  stepType,
  status: 'QUEUED',
  attemptEpoch: 1,
  retryAttempt: 0,
  isLastRetry: true,
  queueMetadata: {},
  queueReason: 'WAITING_FOR_DEPENDENCIES',
  engineRunId: RUN_ID,
  engineWorkflowId: RUN_ID,
  createdAt: '2025-05-02T09:20:11.204Z',
  updatedAt: '2025-05-02T09:20:11.204Z',
  ...fields,
});

const planStep = step('plan', 'Plan', 'opentofu.plan', {
  id: '0196a3c7e1f27b3c8d4e5f6071829304',
  status: 'SUCCEEDED',
  queueReason: 'FINISHED',
  startedAt: '2025-05-02T09:20:11.702Z',
  completedAt: '2025-05-02T09:20:18.991Z',
  updatedAt: '2025-05-02T09:20:18.991Z',
  outputData: { plan: { add: 1, change: 0, destroy: 0 } },
});

const approvalStep = step('approve', 'Approve', 'approval', {
  id: '0196a3c7e1f37c4d9e5f607182930415',
  status: 'WAITING_FOR_APPROVAL',
  queueReason: 'WAITING_FOR_APPROVAL',
  startedAt: '2025-05-02T09:20:19.020Z',
  updatedAt: '2025-05-02T09:20:19.020Z',
});

export const stepExecutionsExample: Static<typeof StepExecution>[] = [planStep, approvalStep];

/** The approval step once approved. */
export const approvedStepExample: Static<typeof StepExecution> = {
  ...approvalStep,
  status: 'SUCCEEDED',
  queueReason: 'FINISHED',
  completedAt: '2025-05-02T09:31:45.118Z',
  updatedAt: '2025-05-02T09:31:45.118Z',
};

export const logsPageExample: Static<typeof LogsPage> = {
  data: [
    { seq: 1, stream: 'system', line: 'tofu init', createdAt: '2025-05-02T09:20:11.930Z' },
    { seq: 2, stream: 'stdout', line: 'OpenTofu has been successfully initialized!', createdAt: '2025-05-02T09:20:14.402Z' },
    { seq: 3, stream: 'stdout', line: 'Plan: 1 to add, 0 to change, 0 to destroy.', createdAt: '2025-05-02T09:20:18.655Z' },
  ],
  meta: { limit: 1000, lastSeq: 3, complete: true, stepStatus: 'SUCCEEDED' },
};
