import { createEnvironmentExample, environmentExample } from './environments.examples.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, Example, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import { CreateEnvironment, Environment, EnvironmentListQuery, UpdateEnvironment } from './environments.schema.ts';
import { createEnvironment, deleteEnvironment, getEnvironment, listEnvironments, updateEnvironment } from './environments.service.ts';

export async function environmentRoutes(app: App) {
  const tags = ['environments'];

  app.post(
    '/environments',
    {
      config: { permission: 'environment:write', auditFields: ['projectId', 'givenId', 'name', 'description', 'executionEnvironmentId'] },
      schema: {
        tags,
        summary: 'Create an environment in a project',
        body: Example(CreateEnvironment, createEnvironmentExample),
        response: {
          ...errorResponses({ 409: 'The project already has an environment with this givenId' }),
          201: Example(Envelope(Environment), { data: environmentExample }),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createEnvironment(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/environments',
    {
      schema: {
        tags,
        summary: "List the organization's environments; `projectId` filters",
        querystring: EnvironmentListQuery,
        response: { 200: ListEnvelope(Environment) },
      },
    },
    async (request) => {
      const { items, meta } = await listEnvironments(app.db, request.principal, pageRequest(request.query), request.query);
      return { data: items, meta };
    },
  );

  app.get(
    '/environments/:id',
    {
      schema: { tags, summary: 'Read an environment', params: IdParams, response: { 200: Envelope(Environment) } },
    },
    async (request) => ({ data: await getEnvironment(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/environments/:id',
    {
      config: { permission: 'environment:write', auditFields: ['name', 'description', 'executionEnvironmentId'] },
      schema: { tags, summary: 'Change an environment', params: IdParams, body: UpdateEnvironment, response: { 200: Envelope(Environment) } },
    },
    async (request) => ({ data: await updateEnvironment(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/environments/:id',
    {
      config: { permission: 'environment:write' },
      schema: {
        tags,
        summary: 'Delete an environment without stacks (409 names the stacks)',
        params: IdParams,
        response: { ...errorResponses({ 409: 'Stacks still use the environment; `details` names them' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteEnvironment(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
