import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent, OrderedPaginationQuery } from '../platform/schema.ts';
import {
  ApiKey,
  ApiKeyListQuery,
  CreateApiKey,
  CreatedApiKey,
  CreateServiceAccount,
  PrincipalSchema,
  ServiceAccount,
  UpdateServiceAccount,
} from './credentials.schema.ts';
import {
  createApiKey,
  createServiceAccount,
  deleteServiceAccount,
  getApiKey,
  getServiceAccount,
  listApiKeys,
  listServiceAccounts,
  revokeApiKey,
  updateServiceAccount,
} from './credentials.service.ts';

export async function credentialRoutes(app: App) {
  app.get(
    '/auth/whoami',
    {
      config: { permission: 'authenticated' },
      schema: {
        tags: ['auth'],
        operationId: 'whoami',
        summary: 'The authenticated principal, its organization and role',
        response: { 200: Envelope(PrincipalSchema) },
      },
    },
    async (request) => ({ data: request.principal }),
  );

  const saTags = ['service-accounts'];
  app.post(
    '/service-accounts',
    {
      config: { permission: 'service-account:manage', auditFields: ['name', 'role'] },
      schema: { tags: saTags, summary: 'Create a service account', body: CreateServiceAccount, response: { 201: Envelope(ServiceAccount) } },
    },
    async (request, reply) => reply.status(201).send({ data: await createServiceAccount(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/service-accounts',
    {
      schema: { tags: saTags, summary: 'List service accounts', querystring: OrderedPaginationQuery, response: { 200: ListEnvelope(ServiceAccount) } },
    },
    async (request) => {
      const { items, meta } = await listServiceAccounts(app.db, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/service-accounts/:id',
    {
      schema: { tags: saTags, summary: 'Read a service account', params: IdParams, response: { 200: Envelope(ServiceAccount) } },
    },
    async (request) => ({ data: await getServiceAccount(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/service-accounts/:id',
    {
      config: { permission: 'service-account:manage', auditFields: ['name', 'role'] },
      schema: {
        tags: saTags,
        summary: 'Rename a service account or change its role',
        params: IdParams,
        body: UpdateServiceAccount,
        response: { 200: Envelope(ServiceAccount) },
      },
    },
    async (request) => ({ data: await updateServiceAccount(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/service-accounts/:id',
    {
      config: { permission: 'service-account:manage' },
      schema: { tags: saTags, summary: 'Delete a service account and its keys', params: IdParams, response: { 204: NoContent } },
    },
    async (request, reply) => {
      await deleteServiceAccount(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  const keyTags = ['api-keys'];
  app.post(
    '/api-keys',
    {
      config: { permission: 'authenticated', auditFields: ['name', 'serviceAccountId', 'userId', 'expiresAt'] },
      schema: {
        tags: keyTags,
        summary: 'Create an API key for the caller or a service account; the token is shown once',
        body: CreateApiKey,
        response: { ...errorResponses({ 422: 'expiresAt is not in the future, or both serviceAccountId and userId are given' }), 201: Envelope(CreatedApiKey) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createApiKey(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/api-keys',
    {
      schema: {
        tags: keyTags,
        summary: 'List API keys (own keys; ADMIN+ sees all of the organization)',
        querystring: ApiKeyListQuery,
        response: { 200: ListEnvelope(ApiKey) },
      },
    },
    async (request) => {
      const { items, meta } = await listApiKeys(app.db, request.principal, request.query.serviceAccountId, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/api-keys/:id',
    {
      schema: { tags: keyTags, summary: 'Read an API key (never its token)', params: IdParams, response: { 200: Envelope(ApiKey) } },
    },
    async (request) => ({ data: await getApiKey(app.db, request.principal, request.params.id) }),
  );

  app.delete(
    '/api-keys/:id',
    {
      config: { permission: 'authenticated' },
      schema: {
        tags: keyTags,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key; it fails on its next request',
        params: IdParams,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      await revokeApiKey(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
