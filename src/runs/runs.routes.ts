import { approvedStepExample, pipelineRunExample, stepExecutionsExample } from './runs.examples.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, Example, IdParams, ListEnvelope, PaginationQuery } from '../platform/schema.ts';
import { PipelineRun, RunListQuery, RunTransition, StepExecution, StepExecutionListQuery } from './runs.schema.ts';
import { cancelRun, decideApproval, getExecution, getRun, listExecutions, listRuns, listTransitions, retryRun } from './runs.service.ts';

export async function runRoutes(app: App) {
  const tags = ['pipeline-runs'];

  app.get(
    '/pipeline-runs',
    {
      schema: {
        tags,
        summary: 'List pipeline runs (filter by pipeline, stack, environment, who started them, status)',
        querystring: RunListQuery,
        response: { 200: Example(ListEnvelope(PipelineRun), { data: [pipelineRunExample], meta: { limit: 50 } }) },
      },
    },
    async (request) => {
      const { items, meta } = await listRuns(app.db, request.principal, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/pipeline-runs/:id',
    {
      schema: { tags, summary: 'Read a pipeline run', params: IdParams, response: { 200: Example(Envelope(PipelineRun), { data: pipelineRunExample }) } },
    },
    async (request) => ({ data: await getRun(app.db, request.principal, request.params.id) }),
  );

  app.post(
    '/pipeline-runs/:id/cancel',
    {
      config: { permission: 'run:operate', audit: 'run.cancel' },
      schema: {
        tags,
        summary: 'Cancel a run that is not finished; its running processes are killed',
        params: IdParams,
        response: { ...errorResponses({ 409: 'The run is already finished' }), 200: Envelope(PipelineRun) },
      },
    },
    async (request) => ({ data: await cancelRun(app.db, request.principal, request.params.id) }),
  );

  app.post(
    '/pipeline-runs/:id/retry',
    {
      config: { permission: 'run:operate', audit: 'run.retry' },
      schema: {
        tags,
        summary: 'Run a FAILED or CANCELLED run again as its next attempt epoch',
        params: IdParams,
        response: { ...errorResponses({ 409: 'The run is neither FAILED nor CANCELLED' }), 200: Envelope(PipelineRun) },
      },
    },
    async (request) => ({ data: await retryRun(app.db, request.principal, request.params.id) }),
  );

  app.get(
    '/pipeline-runs/:id/step-executions',
    {
      schema: {
        tags,
        operationId: 'listStepExecutions',
        summary: 'List the step executions of a run, every attempt included',
        params: IdParams,
        querystring: StepExecutionListQuery,
        response: { 200: Example(ListEnvelope(StepExecution), { data: stepExecutionsExample, meta: { limit: 50 } }) },
      },
    },
    async (request) => {
      const { items, meta } = await listExecutions(app.db, request.principal, request.params.id, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/pipeline-runs/:id/transitions',
    {
      schema: {
        tags,
        operationId: 'listRunTransitions',
        summary: "The run's append-only history: every status change of the run and its steps, with reason and actor",
        params: IdParams,
        querystring: PaginationQuery,
        response: { 200: ListEnvelope(RunTransition) },
      },
    },
    async (request) => {
      const { items, meta } = await listTransitions(app.db, request.principal, request.params.id, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  const stepTags = ['pipeline-step-executions'];
  app.get(
    '/pipeline-step-executions/:id',
    {
      schema: {
        tags: stepTags,
        operationId: 'getStepExecution',
        summary: 'Read a step execution',
        params: IdParams,
        response: { 200: Envelope(StepExecution) },
      },
    },
    async (request) => ({ data: await getExecution(app.db, request.principal, request.params.id) }),
  );

  app.post(
    '/pipeline-step-executions/:id/approve',
    {
      config: { permission: 'run:operate', audit: 'run.approve' },
      schema: {
        tags: stepTags,
        operationId: 'approveStepExecution',
        summary: 'Approve a step WAITING_FOR_APPROVAL (409 otherwise)',
        params: IdParams,
        response: {
          ...errorResponses({ 409: 'The step is not WAITING_FOR_APPROVAL (another decision won, or it never waited)' }),
          200: Example(Envelope(StepExecution), { data: approvedStepExample }),
        },
      },
    },
    async (request) => ({ data: await decideApproval(app.db, request.principal, request.params.id, 'approve') }),
  );

  app.post(
    '/pipeline-step-executions/:id/reject',
    {
      config: { permission: 'run:operate', audit: 'run.reject' },
      schema: {
        tags: stepTags,
        operationId: 'rejectStepExecution',
        summary: 'Reject a step WAITING_FOR_APPROVAL; the run fails (409 otherwise)',
        params: IdParams,
        response: {
          ...errorResponses({ 409: 'The step is not WAITING_FOR_APPROVAL (another decision won, or it never waited)' }),
          200: Envelope(StepExecution),
        },
      },
    },
    async (request) => ({ data: await decideApproval(app.db, request.principal, request.params.id, 'reject') }),
  );
}
