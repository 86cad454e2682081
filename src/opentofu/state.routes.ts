import { errorResponses } from '../platform/http/openapi.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { metrics } from '../platform/metrics/metrics.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent, OrderedPaginationQuery } from '../platform/schema.ts';
import { authenticateStateCaller, type StateCaller } from './state-auth.ts';
import { StateLocked, StateLockStatus, StateVersion, StateVersionParams, StateVersionWithState, StateWriteQuery, WorkspaceParams } from './state.schema.ts';
import {
  assertContentMd5,
  forceUnlockState,
  getStateLock,
  getStateVersion,
  listStateVersions,
  lockState,
  MAX_LOCK_INFO_BYTES,
  readState,
  resolveStateStack,
  StateLockedError,
  unlockState,
  writeState,
} from './state.service.ts';

/** Largest state file the backend takes. */
export const MAX_STATE_BYTES = 32 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    /** The state backend's caller, known before the body is read (the backend's onRequest hook). */
    stateCaller: StateCaller | null;
  }
}

const LOCK_INFO_FIELDS = ['ID', 'Operation', 'Info', 'Who', 'Version', 'Created', 'Path'] as const;

/** Answers a 423 with the holder's lock info, which OpenTofu reads from the body, beside the ErrorBody fields. */
function sendLocked(reply: FastifyReply, error: StateLockedError) {
  let info: Record<string, unknown> = {};
  try {
    info = JSON.parse(error.holder.info) as Record<string, unknown>;
  } catch {
    // Stored only once it parsed.
  }
  const fields = Object.fromEntries(LOCK_INFO_FIELDS.filter((k) => typeof info[k] === 'string').map((k) => [k, info[k]]));
  return reply.status(423).send({ code: error.code, message: error.message, requestId: reply.request.id, ...fields, ID: error.holder.lock_id });
}

async function lockedAs423<T>(reply: FastifyReply, fn: () => Promise<T>) {
  try {
    await fn();
    return reply.status(200).send();
  } catch (error) {
    if (error instanceof StateLockedError) return sendLocked(reply, error);
    throw error;
  }
}

const STATE_OPS: Record<string, string> = { GET: 'read', POST: 'write', LOCK: 'lock', UNLOCK: 'unlock' };

/** A closed set of results: ok, locked (423), refused (another 4xx), error (5xx). */
function resultOf(status: number): string {
  if (status < 400) return 'ok';
  if (status === 423) return 'locked';
  return status < 500 ? 'refused' : 'error';
}

/**
 * OpenTofu's `http` backend protocol, per stack workspace (`stack-<id>`, the stack's
 * serviceStateBackendWorkspace), as its client expects it (docs/opentofu.md#the-state-backend): GET the
 * state (204 when none), POST a new one (`?ID=` the lock held), LOCK and UNLOCK `/lock` with the lock
 * info (200, or 423 with the holder's info). These routes authenticate with HTTP Basic (the token as
 * password) or Bearer, and take a run credential as well as an API key.
 */
async function backendRoutes(app: App) {
  const tags = ['state'];
  // Counted when answered, by what the client asked and the status class it got (docs/operations.md).
  app.addHook('onResponse', async (request, reply) => {
    metrics.stateOps.inc({ op: STATE_OPS[request.method] ?? 'other', result: resultOf(reply.statusCode) });
  });
  // Who calls, and whether they may, is settled before a byte of the body is read: a caller who may not
  // write cannot make the server read (let alone parse) a 32 MiB body.
  app.decorateRequest('stateCaller', null);
  app.addHook('onRequest', async (request) => {
    request.stateCaller = await authenticateStateCaller(app.db, request);
  });
  // The state and lock bodies are OpenTofu's, not the API's {data} envelope: taken as bytes, stored as sent.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_STATE_BYTES }, (_req, body, done) => done(null, body));
  const bytes = (body: unknown) => (Buffer.isBuffer(body) ? body : Buffer.alloc(0));
  // Every backend request names its stack's workspace, which its caller must be able to reach.
  const callerAndStack = async (request: FastifyRequest, workspace: string) => {
    const caller = request.stateCaller!;
    return { caller, stack: await resolveStateStack(app.db, caller, workspace) };
  };

  // State holds secrets: reading it is a sensitive read the audit log records, and no body is copied into it.
  app.get(
    '/state-backend/:workspace',
    {
      config: { public: true, runCredentials: true, audit: 'state.download' },
      schema: {
        tags,
        operationId: 'getBackendState',
        summary: "Read a stack's current OpenTofu state (http backend; 204 when there is none)",
        params: WorkspaceParams,
        response: { 200: {}, 204: NoContent },
      },
    },
    async (request, reply) => {
      const { stack } = await callerAndStack(request, request.params.workspace);
      const state = await readState(app.db, app.secrets, stack);
      if (!state) return reply.status(204).send(null);
      return reply.status(200).header('Content-Type', 'application/json').header('Content-MD5', state.md5.toString('base64')).send(state.bytes);
    },
  );

  app.post(
    '/state-backend/:workspace',
    {
      config: { public: true, runCredentials: true, audit: 'state.upload' },
      bodyLimit: MAX_STATE_BYTES,
      schema: {
        tags,
        operationId: 'writeBackendState',
        summary: 'Write a new state version (http backend); ?ID= names the lock the writer holds',
        params: WorkspaceParams,
        querystring: StateWriteQuery,
        response: {
          ...errorResponses({ 409: 'The lock named by ID is not held, or the state is stale or of another lineage' }),
          200: NoContent,
          423: StateLocked,
        },
      },
    },
    async (request, reply) => {
      const { caller, stack } = await callerAndStack(request, request.params.workspace);
      const body = bytes(request.body);
      assertContentMd5(request.headers['content-md5'], body);
      return lockedAs423(reply, () => writeState(app.db, app.secrets, caller, stack, request.query.ID, body));
    },
  );

  // LOCK and UNLOCK cannot be described in OpenAPI 3.0 (it knows only the standard methods): hidden there, documented in docs/opentofu.md.
  app.route({
    method: 'LOCK',
    url: '/state-backend/:workspace/lock',
    config: { public: true, runCredentials: true, audit: 'state.lock' },
    bodyLimit: MAX_LOCK_INFO_BYTES,
    schema: { hide: true, params: WorkspaceParams, response: { 200: NoContent, 423: StateLocked } },
    handler: async (request, reply) => {
      const { caller, stack } = await callerAndStack(request, request.params.workspace);
      return lockedAs423(reply, () => lockState(app.db, caller, stack, bytes(request.body)));
    },
  });

  app.route({
    method: 'UNLOCK',
    url: '/state-backend/:workspace/lock',
    config: { public: true, runCredentials: true, audit: 'state.unlock' },
    bodyLimit: MAX_LOCK_INFO_BYTES,
    schema: { hide: true, params: WorkspaceParams, response: { 200: NoContent, 423: StateLocked } },
    handler: async (request, reply) => {
      const { caller, stack } = await callerAndStack(request, request.params.workspace);
      return lockedAs423(reply, () => unlockState(app.db, caller, stack, bytes(request.body)));
    },
  });
}

export async function stateRoutes(app: App) {
  const tags = ['state'];
  await app.register(backendRoutes);

  app.get(
    '/stacks/:id/state-versions',
    {
      schema: {
        tags,
        summary: "List every version of a stack's state, newest last",
        params: IdParams,
        querystring: OrderedPaginationQuery,
        response: { 200: ListEnvelope(StateVersion) },
      },
    },
    async (request) => {
      const { items, meta } = await listStateVersions(app.db, request.principal, request.params.id, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/stacks/:id/state-versions/:versionId',
    {
      config: { permission: 'state:read', audit: 'state.download' },
      schema: {
        tags,
        summary: 'Read one state version with its state (it may hold secrets)',
        params: StateVersionParams,
        response: { 200: Envelope(StateVersionWithState) },
      },
    },
    async (request) => ({ data: await getStateVersion(app.db, app.secrets, request.principal, request.params.id, request.params.versionId) }),
  );

  app.get(
    '/stacks/:id/state-lock',
    {
      schema: {
        tags,
        operationId: 'getStackStateLock',
        summary: "Who holds a stack's state lock",
        params: IdParams,
        response: { 200: Envelope(StateLockStatus) },
      },
    },
    async (request) => ({ data: await getStateLock(app.db, request.principal, request.params.id) }),
  );

  app.delete(
    '/stacks/:id/state-lock',
    {
      config: { permission: 'state:force-unlock' },
      schema: {
        tags,
        operationId: 'forceUnlockStackState',
        summary: "Force-unlock a stack's state (recorded in the holding run's history)",
        params: IdParams,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      await forceUnlockState(app.db, request.principal, request.params.id);
      return reply.status(204).send(null);
    },
  );
}
