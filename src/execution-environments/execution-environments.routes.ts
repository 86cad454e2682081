import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import {
  CreateExecutionEnvironment,
  ExecutionEnvironment,
  ExecutionEnvironmentListQuery,
  UpdateExecutionEnvironment,
} from './execution-environments.schema.ts';
import {
  createExecutionEnvironment,
  deleteExecutionEnvironment,
  getExecutionEnvironment,
  listExecutionEnvironments,
  updateExecutionEnvironment,
} from './execution-environments.service.ts';

export async function executionEnvironmentRoutes(app: App) {
  const tags = ['execution-environments'];

  app.post(
    '/execution-environments',
    {
      config: {
        permission: 'execution-environment:manage',
        auditFields: ['givenId', 'name', 'type', 'cloudAccountId', 'region', 'vpcId', 'subnetId', 'securityGroupId', 'egressAllow'],
      },
      schema: {
        tags,
        summary: 'Create an execution environment: CLOUD (an AWS network) or LOCAL (the worker host)',
        body: CreateExecutionEnvironment,
        response: { ...errorResponses({ 409: 'An execution environment with this givenId already exists' }), 201: Envelope(ExecutionEnvironment) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createExecutionEnvironment(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/execution-environments',
    {
      schema: {
        tags,
        summary: "List the organization's execution environments; `type` filters",
        querystring: ExecutionEnvironmentListQuery,
        response: { 200: ListEnvelope(ExecutionEnvironment) },
      },
    },
    async (request) => {
      const { items, meta } = await listExecutionEnvironments(app.db, request.principal, pageRequest(request.query), request.query);
      return { data: items, meta };
    },
  );

  app.get(
    '/execution-environments/:id',
    {
      schema: { tags, summary: 'Read an execution environment', params: IdParams, response: { 200: Envelope(ExecutionEnvironment) } },
    },
    async (request) => ({ data: await getExecutionEnvironment(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/execution-environments/:id',
    {
      config: {
        permission: 'execution-environment:manage',
        auditFields: ['name', 'cloudAccountId', 'region', 'vpcId', 'subnetId', 'securityGroupId', 'egressAllow'],
      },
      schema: {
        tags,
        summary: 'Change an execution environment (its type is fixed)',
        params: IdParams,
        body: UpdateExecutionEnvironment,
        response: { 200: Envelope(ExecutionEnvironment) },
      },
    },
    async (request) => ({ data: await updateExecutionEnvironment(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/execution-environments/:id',
    {
      config: { permission: 'execution-environment:manage' },
      schema: {
        tags,
        summary: 'Delete an execution environment no environment uses (409 names those that do)',
        params: IdParams,
        response: { ...errorResponses({ 409: 'Environments still use the execution environment; `details` names them' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteExecutionEnvironment(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
