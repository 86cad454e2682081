import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import { CreateModuleInstance, ModuleInstance, ModuleInstanceListQuery, UpdateModuleInstance, UpgradeModuleInstance } from './module-instances.schema.ts';
import {
  createModuleInstance,
  deleteModuleInstance,
  getModuleInstance,
  listModuleInstances,
  updateModuleInstance,
  upgradeModuleInstance,
} from './module-instances.service.ts';
import { ModuleGraph, moduleGraphOf } from './module-graph.ts';
import { deployEnvironment, DeployRequest, deployModuleInstance } from './module-deploys.ts';
import { PipelineRun } from '../runs/runs.schema.ts';
import { Type } from '@sinclair/typebox';

const INPUT_ERRORS = {
  409: 'The instance is being deleted',
  422: 'The values break rules of the version (every problem listed, by input id and label), or their references would close a cycle',
};

/** Module instances: created in an environment from a version, each owning an OpenTofu stack (docs/modules.md). */
export async function moduleInstanceRoutes(app: App) {
  const tags = ['modules'];

  app.post(
    '/module-instances',
    {
      config: { permission: 'module:write', auditFields: ['environmentId', 'moduleVersionId', 'givenId', 'name'] },
      schema: {
        tags,
        summary: 'Create a module instance in an environment, with the OpenTofu stack it owns',
        body: CreateModuleInstance,
        response: {
          ...errorResponses({ 409: 'The environment already has an instance with this givenId', 422: INPUT_ERRORS[422] }),
          201: Envelope(ModuleInstance),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createModuleInstance(app.db, app.secrets, request.principal, request.body.data) }),
  );

  app.get(
    '/module-instances',
    {
      schema: {
        tags,
        summary: "List the organization's module instances; `environmentId` and `moduleDefinitionId` filter",
        querystring: ModuleInstanceListQuery,
        response: { 200: ListEnvelope(ModuleInstance) },
      },
    },
    async (request) => {
      const { items, meta } = await listModuleInstances(app.db, request.principal, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/module-instances/:id',
    {
      schema: {
        tags,
        summary: 'Read a module instance with its resolved inputs and references',
        params: IdParams,
        response: { 200: Envelope(ModuleInstance) },
      },
    },
    async (request) => ({ data: await getModuleInstance(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/module-instances/:id',
    {
      config: { permission: 'module:write', auditFields: ['name'] },
      schema: {
        tags,
        summary: 'Rename a module instance or replace its values',
        params: IdParams,
        body: UpdateModuleInstance,
        response: { ...errorResponses(INPUT_ERRORS), 200: Envelope(ModuleInstance) },
      },
    },
    async (request) => ({ data: await updateModuleInstance(app.db, app.secrets, request.principal, request.params.id, request.body.data) }),
  );

  app.post(
    '/module-instances/:id/upgrade',
    {
      config: { permission: 'module:write', auditFields: ['moduleVersionId'] },
      schema: {
        tags,
        summary: 'Move a module instance to another version of its definition; values carry over through moved_from',
        params: IdParams,
        body: UpgradeModuleInstance,
        response: { ...errorResponses(INPUT_ERRORS), 200: Envelope(ModuleInstance) },
      },
    },
    async (request) => ({ data: await upgradeModuleInstance(app.db, app.secrets, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/module-instances/:id',
    {
      config: { permission: 'module:write' },
      schema: {
        tags,
        summary: 'Delete a module instance: at once (204) when its stack holds nothing, else after its destroy run (202, the instance with deletingRunId)',
        params: IdParams,
        response: {
          ...errorResponses({ 409: 'Other instances consume its outputs; `details` names them' }),
          202: Envelope(ModuleInstance),
          204: NoContent,
        },
      },
    },
    async (request, reply) => {
      const outcome = await deleteModuleInstance(app.db, request.principal, request.params.id);
      if (outcome.deleted) return reply.code(204).send(null);
      return reply.code(202).send({ data: await getModuleInstance(app.db, request.principal, request.params.id) });
    },
  );
}

/** Deploys read an empty body as `{data: {}}`: an apply with the defaults. */
async function emptyBodyIsDefaults(request: { body: unknown }) {
  if (request.body === undefined) request.body = { data: {} };
}

const EnvironmentDeploy = Type.Object({
  runs: Type.Array(Type.Object({ moduleInstanceId: Type.String(), givenId: Type.String(), run: PipelineRun }), {
    description: 'The runs started, producers before consumers',
  }),
  unchanged: Type.Array(Type.Object({ moduleInstanceId: Type.String(), givenId: Type.String() }), {
    description: 'Instances whose last apply deployed their current version and values',
  }),
});

/** The module graph of an environment, and deploys. */
export async function moduleGraphRoutes(app: App) {
  app.post(
    '/module-instances/:id/deploy',
    {
      config: { permission: 'run:operate', auditFields: ['action', 'autoapprove', 'description'] },
      preValidation: emptyBodyIsDefaults,
      schema: {
        tags: ['modules'],
        operationId: 'deployModuleInstance',
        summary: 'Deploy a module instance: a run of its stack, which waits while an instance it consumes deploys',
        params: IdParams,
        body: DeployRequest,
        response: {
          ...errorResponses({
            409: 'The instance is being deleted',
            422: 'Its values break a rule, or a reference names an instance or output that does not exist',
          }),
          201: Envelope(PipelineRun),
        },
      },
    },
    async (request, reply) =>
      reply.status(201).send({ data: await deployModuleInstance(app.db, app.secrets, request.principal, request.params.id, request.body.data) }),
  );

  app.post(
    '/environments/:id/deploy',
    {
      config: { permission: 'run:operate', auditFields: ['action', 'autoapprove', 'description'] },
      preValidation: emptyBodyIsDefaults,
      schema: {
        tags: ['environments'],
        operationId: 'deployEnvironment',
        summary: 'Deploy every module instance of the environment whose version or values changed, in the order of its module graph',
        params: IdParams,
        body: DeployRequest,
        response: {
          ...errorResponses({ 422: "An instance's values break a rule, or a reference names an instance or output that does not exist" }),
          201: Envelope(EnvironmentDeploy),
        },
      },
    },
    async (request, reply) =>
      reply.status(201).send({ data: await deployEnvironment(app.db, app.secrets, request.principal, request.params.id, request.body.data) }),
  );

  app.get(
    '/environments/:id/module-graph',
    {
      schema: {
        tags: ['environments'],
        operationId: 'getModuleGraph',
        summary: "The environment's module graph: its instances, the instances elsewhere they reference, and an edge per reference",
        params: IdParams,
        response: { 200: Envelope(ModuleGraph) },
      },
    },
    async (request) => ({ data: await moduleGraphOf(app.db, request.principal, request.params.id) }),
  );
}
