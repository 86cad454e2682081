import { ConcurrencySlots, slotHolderOf } from '../platform/http/concurrency-slots.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent, PaginationQuery } from '../platform/schema.ts';
import { Branch, CodeSource, CodeSourceListQuery, CreateCodeSource, UpdateCodeSource } from './code-sources.schema.ts';
import { createCodeSource, deleteCodeSource, getCodeSource, listBranches, listCodeSources, updateCodeSource } from './code-sources.service.ts';

/**
 * How many branch listings may be under way at once. Each holds up to 16 MiB of a tenant's server's
 * answer and up to about half a second of CPU to parse it: a VIEWER may list, so without a bound one
 * member's loop of requests would take the process's memory and CPU from every other tenant.
 */
export const BRANCH_LISTINGS = { maxPerCaller: 4, maxPerOrganization: 8, maxTotal: 16 } as const;

export async function codeSourceRoutes(app: App) {
  const tags = ['code-sources'];
  const listings = new ConcurrencySlots({
    what: "repositories' branch listings",
    code: 'Git:Repository:TOO_MANY_LISTINGS',
    retryAfterSeconds: 2,
    ...BRANCH_LISTINGS,
  });

  app.post(
    '/code-sources',
    {
      config: {
        permission: 'code-source:manage',
        auditFields: ['name', 'givenId', 'url', 'provider', 'authType', 'gitAppInstallationId', 'gitSelfHostedServerId'],
      },
      schema: {
        tags,
        summary: 'Link a Git repository (its token and webhook secret are stored sealed and never returned)',
        body: CreateCodeSource,
        response: {
          ...errorResponses({
            409: 'A code source with this givenId already exists',
            422: 'The URL or the authentication settings are not valid; `details` says why',
          }),
          201: Envelope(CodeSource),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createCodeSource(app.db, app.secrets, app.config, request.principal, request.body.data) }),
  );

  app.get(
    '/code-sources',
    {
      schema: { tags, summary: "List the organization's code sources", querystring: CodeSourceListQuery, response: { 200: ListEnvelope(CodeSource) } },
    },
    async (request) => {
      const { items, meta } = await listCodeSources(app.db, app.config, request.principal, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/code-sources/:id',
    {
      schema: { tags, summary: 'Read a code source', params: IdParams, response: { 200: Envelope(CodeSource) } },
    },
    async (request) => ({ data: await getCodeSource(app.db, app.config, request.principal, request.params.id) }),
  );

  app.patch(
    '/code-sources/:id',
    {
      config: { permission: 'code-source:manage', auditFields: ['name', 'url', 'provider', 'authType', 'gitAppInstallationId', 'gitSelfHostedServerId'] },
      schema: {
        tags,
        summary: 'Change a code source (token or webhookSecret null removes it)',
        params: IdParams,
        body: UpdateCodeSource,
        response: {
          ...errorResponses({
            409: 'A code source with this givenId already exists',
            422: 'The URL or the authentication settings are not valid; `details` says why',
          }),
          200: Envelope(CodeSource),
        },
      },
    },
    async (request) => ({ data: await updateCodeSource(app.db, app.secrets, app.config, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/code-sources/:id',
    {
      config: { permission: 'code-source:manage' },
      schema: {
        tags,
        summary: 'Delete a code source no stack uses (409 names those that do)',
        params: IdParams,
        response: { ...errorResponses({ 409: 'Stacks still use the code source; `details` names them' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteCodeSource(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/code-source/:id/branches',
    {
      schema: {
        tags,
        summary:
          'Every branch of the repository with its head commit, over the Git protocol, in name order: all of them, or a page when cursor or limit is given ' +
          `(422 refused credential or no such repository, 502 unreachable, 504 timeout). One caller lists at most ${BRANCH_LISTINGS.maxPerCaller} repositories ` +
          `at once per API process, one organization ${BRANCH_LISTINGS.maxPerOrganization}, the process ${BRANCH_LISTINGS.maxTotal} (429 beyond)`,
        params: IdParams,
        querystring: PaginationQuery,
        response: {
          ...errorResponses({
            422: 'The Git server refused the credential, has no such repository, or is at an address Plinth does not connect to',
            429: 'Too many branch listings under way for this caller, its organization or this API process, or too many failed authentications from this address',
            502: true,
            504: true,
          }),
          200: ListEnvelope(Branch),
        },
      },
    },
    async (request) => {
      const { principal, params, query } = request;
      const { items, meta } = await listings.hold(slotHolderOf(principal), () => listBranches(app.db, app.secrets, app.config, principal, params.id, query));
      return { data: items, meta };
    },
  );
}
