// The audit log's recording: which requests are audited (actions.ts), and how each one's row gets
// into the database in the same transaction as the change it records, without any service being
// written for it. An audited request runs inside an AsyncLocalStorage scope set by an onRequest hook
// of its route; the first transaction of that request that writes something appends the row just
// before its COMMIT (a commit hook, db/commit-hooks.ts), and a lone write outside any transaction is
// given one. A request that changed nothing (refused, failed, or a sensitive read) gets its row just
// before its response is sent.

import { AsyncLocalStorage } from 'node:async_hooks';
import type { CompiledQuery, DatabaseConnection } from 'kysely';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import { registerCommitHook } from '../db/commit-hooks.ts';
import type { Db } from '../db/db.ts';
import type { AuditOutcome } from '../db/enums.ts';
import { auditSpecOf, type AuditSpec } from './actions.ts';
import { appendAuditEvent, type AuditEventDraft } from './audit-writer.repo.ts';
import { allowlistProblems, auditDiff } from './diff.ts';

interface AuditScope {
  request: FastifyRequest;
  spec: AuditSpec;
  /** The body fields the route lets its audit rows keep (config.auditFields); none without a list. */
  fields: readonly string[] | undefined;
  /** Set once the row is written (or can no longer be): later transactions of the request add none. */
  recorded: boolean;
  /** The id of what a create made, learnt from its first insert into the route's table. */
  createdId?: string;
  /** The request counts among the audited ones in flight (enterAudited) until its onSend. */
  entered?: boolean;
  /** The standalone transaction of a request that changed nothing writes even without a write. */
  standalone?: { outcome: AuditOutcome; statusCode: number; errorCode: string | null };
}

const scopes = new AsyncLocalStorage<AuditScope>();

/**
 * Audited requests in flight. On Node 20 an enabled AsyncLocalStorage runs a hook on every promise of
 * the process (a third of whoami's CPU in bench:api), so the storage is disabled whenever no audited
 * request is in flight, and a run() enables it again: plain reads pay nothing while nothing audited runs.
 */
let inFlight = 0;

function enterAudited(): void {
  inFlight++;
}

/** How many audited requests are in flight (a test checks that every one is let go). */
export function auditedInFlight(): number {
  return inFlight;
}

function leaveAudited(): void {
  inFlight = Math.max(0, inFlight - 1);
  if (inFlight === 0) scopes.disable();
}

/** The audited request whose change the current transaction is making, if it still needs its row. */
function pendingScope(): AuditScope | undefined {
  const scope = scopes.getStore();
  return scope && !scope.recorded && scope.request.principal ? scope : undefined;
}

function draftOf(scope: AuditScope): AuditEventDraft {
  const { request, spec } = scope;
  const p = request.principal;
  const params = request.params as Record<string, unknown> | undefined;
  const paramId = typeof params?.id === 'string' ? params.id : null;
  return {
    organizationId: p.organizationId,
    actorType: p.principalType,
    actorId: p.userId,
    apiKeyId: p.identityId || null,
    action: spec.action,
    resourceType: spec.resourceType,
    resourceId: paramId ?? scope.createdId ?? null,
    outcome: scope.standalone?.outcome ?? 'SUCCESS',
    statusCode: scope.standalone?.statusCode ?? null,
    errorCode: scope.standalone?.errorCode ?? null,
    requestId: request.id,
    ip: request.ip ?? null,
    userAgent: (request.headers['user-agent'] ?? '').slice(0, 512) || null,
    diff: auditDiff(request.body, scope.fields),
  };
}

/** The id a create gives its new row: the `id` column of its first insert into the route's table. */
function insertedId(query: CompiledQuery, table: string): string | undefined {
  const node = query.query as unknown as {
    kind: string;
    into?: { table?: { identifier?: { name?: string } } };
    columns?: { column?: { name?: string } }[];
    values?: { values?: { kind: string; values: unknown[] }[] };
  };
  if (node.kind !== 'InsertQueryNode' || node.into?.table?.identifier?.name !== table) return undefined;
  const index = node.columns?.findIndex((c) => c.column?.name === 'id') ?? -1;
  const first = node.values?.values?.[0];
  if (index < 0 || !first) return undefined;
  const value = first.kind === 'PrimitiveValueListNode' ? first.values[index] : (first.values[index] as { value?: unknown } | undefined)?.value;
  return typeof value === 'string' ? value : undefined;
}

registerCommitHook({
  pending: () => pendingScope() !== undefined,
  observeWrite(query) {
    const scope = pendingScope();
    if (scope && scope.createdId === undefined) scope.createdId = insertedId(query, scope.spec.table);
  },
  async beforeCommit(connection: DatabaseConnection, wrote: boolean) {
    const scope = pendingScope();
    if (!scope || (!wrote && !scope.standalone)) return;
    const { anchored } = await appendAuditEvent(connection, scope.request.server.secrets, draftOf(scope));
    scope.recorded = true;
    if (!anchored)
      scope.request.log.error(
        { organizationId: scope.request.principal.organizationId },
        "the audit chain's anchor does not hold: its head was rewritten outside Plinth",
      );
  },
});

function outcomeOf(statusCode: number): AuditOutcome {
  if (statusCode === 403) return 'DENIED';
  return statusCode < 400 ? 'SUCCESS' : 'FAILURE';
}

/** The error code of an ErrorBody payload, without parsing the whole body. */
function errorCodeOf(payload: unknown): string | null {
  if (typeof payload !== 'string') return null;
  return /^\{"code":"([^"]{1,200})"/.exec(payload)?.[1] ?? null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The audit log's name for this route's action (a GET is audited only with one), or false: not audited. */
    audit?: string | false;
    /**
     * The fields of the body's `data` this route's audit rows keep as their diff (`name`, `source.ref`,
     * `steps[].id`; `webhookUrl:origin` keeps only its URL's origin); without a list, they keep none.
     * Never a write-only field: the start refuses one.
     */
    auditFields?: readonly string[];
  }
  interface FastifyRequest {
    auditScope: AuditScope | null;
  }
}

/** A route's own hooks, as Fastify takes them: none, one, or a list. */
function hooksOf<T>(existing: T | T[] | undefined, added: T): T[] {
  return [...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]), added];
}

/**
 * installAudit records every audited request of `app`. Its hooks are added to the audited routes only
 * (by an onRoute hook), so a route that is not audited (every plain GET) pays nothing for the audit
 * log. The scope is entered after authentication; a request refused there (403) gets its scope, and
 * its DENIED row, in onSend. A request with no valid credential has no organization to record it in,
 * and is not recorded (the access log has it). Of its body, a row keeps what the route's
 * `config.auditFields` allowlists (diff.ts): a list naming a field the body schema lacks, or a
 * write-only one, stops the start.
 */
export function installAudit(app: FastifyInstance, db: Db): void {
  app.decorateRequest('auditScope', null);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const config = route.config as { audit?: string | false; auditFields?: readonly string[] } | undefined;
    const declared = config?.audit;
    const fields = config?.auditFields;
    const specs = new Map<string, AuditSpec>();
    for (const method of methods) {
      const spec = auditSpecOf(method, route.url, declared);
      if (spec) specs.set(method, spec);
    }
    const problems = !fields ? [] : specs.size === 0 ? ['the route is not audited'] : allowlistProblems(route.schema?.body as TSchema | undefined, fields);
    if (problems.length) throw new Error(`${methods.join(',')} ${route.url}: config.auditFields: ${problems.join('; ')}`);
    if (specs.size === 0) return;
    const scopeOf = (request: FastifyRequest): AuditScope | undefined => {
      if (request.auditScope) return request.auditScope;
      const spec = specs.get(request.method);
      if (spec) request.auditScope = { request, spec, fields, recorded: false };
      return request.auditScope ?? undefined;
    };
    route.onRequest = hooksOf(route.onRequest, (request: FastifyRequest, _reply: unknown, done: () => void) => {
      const scope = scopeOf(request);
      if (!scope) return done();
      enterAudited();
      scope.entered = true;
      // Everything after this hook, the handler and its transactions included, runs inside the scope.
      scopes.run(scope, done);
    });
    // The row of a request that changed nothing is written before its response leaves: whoever reads
    // the log after the response finds it there.
    route.onSend = hooksOf(route.onSend, async (request: FastifyRequest, reply: { statusCode: number }, payload: unknown) => {
      const scope = scopeOf(request);
      if (!scope) return payload;
      // Let go only here, once the handler has finished: a client that disconnects early must not
      // take the scope from a change still being committed (should onSend never come, the storage
      // merely stays enabled, which costs speed, never an audit row).
      if (scope.entered) {
        scope.entered = false;
        leaveAudited();
      }
      if (scope.recorded || !request.principal) return payload;
      scope.standalone = {
        outcome: outcomeOf(reply.statusCode),
        statusCode: reply.statusCode,
        errorCode: reply.statusCode >= 400 ? errorCodeOf(payload) : null,
      };
      enterAudited();
      try {
        await scopes.run(scope, () => db.transaction().execute(async () => {}));
      } catch (error) {
        request.log.error({ err: error, requestId: request.id }, 'failed to write an audit row');
      } finally {
        scope.recorded = true;
        leaveAudited();
      }
      return payload;
    });
  });
}
