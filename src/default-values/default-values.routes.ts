import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import {
  CreateDefaultValueDefinition,
  DefaultValueDefinition,
  DefaultValueDefinitionListQuery,
  DeleteDefaultValueDefinitionQuery,
  UpdateDefaultValueDefinition,
} from './default-value-definitions.schema.ts';
import { createDefinition, deleteDefinition, getDefinition, listDefinitions, updateDefinitionFields } from './default-value-definitions.service.ts';
import {
  CreateDefaultValue,
  DefaultValue,
  DefaultValueListQuery,
  ResolvedDefaultValue,
  ResolvedDefaultValueQuery,
  UpdateDefaultValue,
} from './default-values.schema.ts';
import {
  createDefaultValue,
  deleteDefaultValue,
  getDefaultValue,
  listDefaultValues,
  resolveForEnvironment,
  updateDefaultValue,
} from './default-values.service.ts';

async function definitionRoutes(app: App) {
  const tags = ['default-value-definitions'];

  app.post(
    '/default-value-definitions',
    {
      config: { permission: 'default-value:write', auditFields: ['givenId', 'name', 'description'] },
      schema: {
        tags,
        summary: 'Create a default-value definition (createdByType USER)',
        body: CreateDefaultValueDefinition,
        response: {
          ...errorResponses({ 409: 'A definition with this givenId already exists', 422: 'The schema is not valid; `details` lists every problem' }),
          201: Envelope(DefaultValueDefinition),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createDefinition(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/default-value-definitions',
    {
      schema: {
        tags,
        summary: "List the organization's default-value definitions",
        querystring: DefaultValueDefinitionListQuery,
        response: { 200: ListEnvelope(DefaultValueDefinition) },
      },
    },
    async (request) => {
      const { items, meta } = await listDefinitions(app.db, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/default-value-definitions/:id',
    {
      schema: { tags, summary: 'Read a default-value definition', params: IdParams, response: { 200: Envelope(DefaultValueDefinition) } },
    },
    async (request) => ({ data: await getDefinition(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/default-value-definitions/:id',
    {
      config: { permission: 'default-value:write', auditFields: ['name', 'description'] },
      schema: {
        tags,
        summary: 'Change a definition; a new schema must accept every stored value (422 names those it would not)',
        params: IdParams,
        body: UpdateDefaultValueDefinition,
        response: {
          ...errorResponses({ 422: 'The schema is not valid, or rejects stored values; `details` names them' }),
          200: Envelope(DefaultValueDefinition),
        },
      },
    },
    async (request) => ({ data: await updateDefinitionFields(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/default-value-definitions/:id',
    {
      config: { permission: 'default-value:write' },
      schema: {
        tags,
        summary: 'Delete a definition: 409 while it has values, unless ?cascade=true deletes them too',
        params: IdParams,
        querystring: DeleteDefaultValueDefinitionQuery,
        response: { ...errorResponses({ 409: 'The definition still has values (and cascade is not true)' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteDefinition(app.db, request.principal, request.params.id, request.query.cascade === true);
      return reply.code(204).send(null);
    },
  );
}

async function valueRoutes(app: App) {
  const tags = ['default-values'];

  app.post(
    '/default-values',
    {
      config: { permission: 'default-value:write', auditFields: ['defaultValueDefinitionId', 'parentId'] },
      schema: {
        tags,
        summary: 'Set a definition’s value on an organization, project or environment',
        body: CreateDefaultValue,
        response: {
          ...errorResponses({ 409: 'The definition already has a value on this parent', 422: "The value does not match the definition's schema" }),
          201: Envelope(DefaultValue),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createDefaultValue(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/default-values',
    {
      schema: {
        tags,
        summary: 'List default values, by definition and/or parent',
        querystring: DefaultValueListQuery,
        response: { 200: ListEnvelope(DefaultValue) },
      },
    },
    async (request) => {
      const { items, meta } = await listDefaultValues(app.db, request.principal, pageRequest(request.query), request.query);
      return { data: items, meta };
    },
  );

  app.get(
    '/default-values/:id',
    {
      schema: { tags, summary: 'Read a default value', params: IdParams, response: { 200: Envelope(DefaultValue) } },
    },
    async (request) => ({ data: await getDefaultValue(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/default-values/:id',
    {
      config: { permission: 'default-value:write' },
      schema: {
        tags,
        summary: 'Change a default value',
        params: IdParams,
        body: UpdateDefaultValue,
        response: { ...errorResponses({ 422: "The value does not match the definition's schema" }), 200: Envelope(DefaultValue) },
      },
    },
    async (request) => ({ data: await updateDefaultValue(app.db, request.principal, request.params.id, request.body.data.value) }),
  );

  app.delete(
    '/default-values/:id',
    {
      config: { permission: 'default-value:write' },
      schema: { tags, summary: 'Delete a default value', params: IdParams, response: { 204: NoContent } },
    },
    async (request, reply) => {
      await deleteDefaultValue(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/environments/:id/resolved-default-values',
    {
      schema: {
        tags,
        operationId: 'resolveEnvironmentDefaultValues',
        summary: 'The effective default values for an environment (environment, then project, then organization, then the schema default), with their source',
        params: IdParams,
        querystring: ResolvedDefaultValueQuery,
        response: { 200: ListEnvelope(ResolvedDefaultValue) },
      },
    },
    async (request) => {
      const { items, meta } = await resolveForEnvironment(app.db, request.principal, request.params.id, pageRequest(request.query), request.query.givenId);
      return { data: items, meta };
    },
  );
}

export async function defaultValueRoutes(app: App) {
  await definitionRoutes(app);
  await valueRoutes(app);
}
