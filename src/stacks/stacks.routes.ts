import { pipelineRunExample } from '../runs/runs.examples.ts';
import { createStackExample, stackExample, triggerStackRunExample } from './stacks.examples.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, Example, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import { PipelineRun } from '../runs/runs.schema.ts';
import { CreateStack, Stack, StackListQuery, TriggerStackRun, UpdateStack } from './stacks.schema.ts';
import { createStack, deleteStack, getStack, listStacks, triggerStackRun, updateStack } from './stacks.service.ts';

export async function stackRoutes(app: App) {
  const tags = ['stacks'];

  app.post(
    '/stacks',
    {
      config: {
        permission: 'stack:write',
        auditFields: ['projectId', 'environmentId', 'name', 'givenId', 'source.codeSourceId', 'source.ref', 'source.path', 'source.onPush'],
      },
      schema: {
        tags,
        summary: 'Create a stack with its change and destroy pipelines',
        body: Example(CreateStack, createStackExample),
        response: {
          ...errorResponses({
            409: 'A stack with this givenId already exists',
            422: 'A pipeline config is not valid, or the environment belongs to another project',
          }),
          201: Example(Envelope(Stack), { data: stackExample }),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createStack(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/stacks',
    {
      schema: { tags, summary: "List the organization's stacks", querystring: StackListQuery, response: { 200: ListEnvelope(Stack) } },
    },
    async (request) => {
      const { items, meta } = await listStacks(app.db, request.principal, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/stacks/:id',
    {
      schema: { tags, summary: 'Read a stack', params: IdParams, response: { 200: Envelope(Stack) } },
    },
    async (request) => ({ data: await getStack(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/stacks/:id',
    {
      config: { permission: 'stack:write', auditFields: ['name', 'source.codeSourceId', 'source.ref', 'source.path', 'source.onPush'] },
      schema: { tags, summary: 'Change a stack', params: IdParams, body: UpdateStack, response: { 200: Envelope(Stack) } },
    },
    async (request) => ({ data: await updateStack(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/stacks/:id',
    {
      config: { permission: 'stack:write' },
      schema: {
        tags,
        summary: 'Delete a stack (409 while a run of it is not finished)',
        params: IdParams,
        response: { ...errorResponses({ 409: 'A run of the stack is not finished, or something still uses the stack' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteStack(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/stacks/:id/pipeline-run',
    {
      config: { permission: 'run:operate', audit: 'run.trigger', auditFields: ['action', 'autoapprove', 'description'] },
      // Every field is optional, so a bare POST (no body at all) means `{data: {}}`: an apply with defaults.
      preValidation: async (request) => {
        if (request.body === undefined) request.body = { data: {} };
      },
      schema: {
        tags,
        operationId: 'triggerStackRun',
        summary: 'Trigger a run of the stack (queued; waits while another run of the stack is not finished)',
        params: IdParams,
        body: Example(TriggerStackRun, triggerStackRunExample),
        response: { 201: Example(Envelope(PipelineRun), { data: { ...pipelineRunExample, status: 'QUEUED', queueReason: 'WAITING_FOR_WORKER' } }) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await triggerStackRun(app.db, request.principal, request.params.id, request.body.data) }),
  );
}
