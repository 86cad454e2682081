import { snapshotSource, type SnapshotDeps } from '../code-sources/git-snapshot.ts';
import { OnDemandSandbox } from '../engine/sandbox/on-demand.ts';
import { ConcurrencySlots, slotHolderOf } from '../platform/http/concurrency-slots.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import type { Logger } from '../platform/logger.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import { CreateModuleDefinition, ModuleDefinition, ModuleDefinitionListQuery, UpdateModuleDefinition } from './module-definitions.schema.ts';
import {
  createModuleDefinition,
  deleteModuleDefinition,
  getModuleDefinition,
  listModuleDefinitions,
  updateModuleDefinition,
} from './module-definitions.service.ts';
import { DeprecateModuleVersion, ModuleVersion, ModuleVersionListQuery, PublishModuleVersion } from './module-versions.schema.ts';
import { deprecateModuleVersion, getModuleVersion, listModuleVersions, publishModuleVersion, type SnapshotSource } from './module-versions.service.ts';

/**
 * How many publishes may be under way at once. Each runs a tenant's Git fetch and archive in a sandbox
 * on the API host, for up to PLINTH_GIT_FETCH_TIMEOUT_MS with a step's memory and CPU: without a bound,
 * one organization's burst of publishes would take the host from every other tenant's requests.
 */
export const PUBLISHES = { maxPerCaller: 2, maxPerOrganization: 2, maxTotal: 4 } as const;

/** Module definitions and their versions (docs/modules.md). */
export async function moduleCatalogueRoutes(app: App) {
  const tags = ['modules'];
  // The Git work of a publish runs in a sandbox of the API process's own, made on first use.
  // Fastify's logger is the pino logger the app was built with; its type only leaves pino's msgPrefix out.
  const log = app.log as Logger;
  const sandbox = OnDemandSandbox.fromEnv(process.env, log);
  const snapshots: SnapshotDeps = { db: app.db, secrets: app.secrets, git: app.config.git, log, sandbox };
  app.addHook('onClose', () => sandbox.close());
  const snapshot: SnapshotSource = (source, ref, path) => snapshotSource(snapshots, source, ref, path);
  const publishes = new ConcurrencySlots({ what: 'module publishes', code: 'Api:ModuleVersion:TOO_MANY_PUBLISHES', retryAfterSeconds: 10, ...PUBLISHES });

  app.post(
    '/module-definitions',
    {
      config: { permission: 'module:write', auditFields: ['type', 'name', 'description', 'global'] },
      schema: {
        tags,
        summary: 'Create a module definition (DRAFT until a version is published); `global` for every organization (super-administrators)',
        body: CreateModuleDefinition,
        response: {
          ...errorResponses({ 403: 'A global definition needs a super-administrator', 409: 'A definition of this type already exists' }),
          201: Envelope(ModuleDefinition),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createModuleDefinition(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/module-definitions',
    {
      schema: {
        tags,
        operationId: 'listModuleDefinitions',
        summary: "List the organization's module definitions and the global ones; `status` filters (DRAFT or ACTIVE)",
        querystring: ModuleDefinitionListQuery,
        response: { 200: ListEnvelope(ModuleDefinition) },
      },
    },
    async (request) => {
      const { items, meta } = await listModuleDefinitions(app.db, request.principal, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/module-definitions/:id',
    { schema: { tags, summary: 'Read a module definition', params: IdParams, response: { 200: Envelope(ModuleDefinition) } } },
    async (request) => ({ data: await getModuleDefinition(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/module-definitions/:id',
    {
      config: { permission: 'module:write', auditFields: ['name', 'description'] },
      schema: {
        tags,
        summary: 'Rename or describe a module definition',
        params: IdParams,
        body: UpdateModuleDefinition,
        response: { ...errorResponses({ 403: 'The definition is global' }), 200: Envelope(ModuleDefinition) },
      },
    },
    async (request) => ({ data: await updateModuleDefinition(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/module-definitions/:id',
    {
      config: { permission: 'module:write' },
      schema: {
        tags,
        summary: 'Delete a module definition and its versions (409 while instances of it exist)',
        params: IdParams,
        response: { ...errorResponses({ 403: 'The definition is global', 409: 'Instances of the definition exist; `details` names them' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteModuleDefinition(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/module-versions',
    {
      config: {
        permission: 'module:write',
        auditFields: ['moduleDefinitionId', 'version', 'source.codeSourceId', 'source.ref', 'source.path'],
      },
      schema: {
        tags,
        summary: `Publish a module version: its ref is pinned to a commit, and the module's directory there archived. One caller runs at most ${PUBLISHES.maxPerCaller} publishes at once per API process, one organization ${PUBLISHES.maxPerOrganization}, the process ${PUBLISHES.maxTotal} (429 beyond)`,
        body: PublishModuleVersion,
        response: {
          ...errorResponses({
            403: 'The definition is global',
            409: 'The version is already published',
            422: 'Not a semantic version, not newer than the latest, invalid inputs or outputs, or the ref or path does not exist',
            429: 'Too many publishes under way for this caller, its organization or this API process, or too many failed authentications from this address',
            502: "The code source's Git server is unreachable or refused the fetch",
            504: 'The fetch or the archive took longer than PLINTH_GIT_FETCH_TIMEOUT_MS',
          }),
          201: Envelope(ModuleVersion),
        },
      },
    },
    async (request, reply) => {
      const { principal, body } = request;
      const published = await publishes.hold(slotHolderOf(principal), () => publishModuleVersion(app.db, snapshot, principal, body.data));
      return reply.status(201).send({ data: published });
    },
  );

  app.get(
    '/module-versions',
    {
      schema: {
        tags,
        summary: 'List module versions (oldest first, which is version order); `moduleDefinitionId` filters',
        querystring: ModuleVersionListQuery,
        response: { 200: ListEnvelope(ModuleVersion) },
      },
    },
    async (request) => {
      const { items, meta } = await listModuleVersions(app.db, request.principal, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/module-versions/:id',
    { schema: { tags, summary: 'Read a module version', params: IdParams, response: { 200: Envelope(ModuleVersion) } } },
    async (request) => ({ data: await getModuleVersion(app.db, request.principal, request.params.id) }),
  );

  app.post(
    '/module-versions/:id/deprecate',
    {
      config: { permission: 'module:write', auditFields: ['message'] },
      preValidation: async (request) => {
        if (request.body === undefined) request.body = { data: {} };
      },
      schema: {
        tags,
        summary: 'Deprecate a module version: new instances and upgrades refuse it; instances on it keep it',
        params: IdParams,
        body: DeprecateModuleVersion,
        response: { ...errorResponses({ 403: 'The definition is global' }), 200: Envelope(ModuleVersion) },
      },
    },
    async (request) => ({ data: await deprecateModuleVersion(app.db, request.principal, request.params.id, request.body.data) }),
  );
}
