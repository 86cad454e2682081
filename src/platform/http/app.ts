import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyPluginCallback,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import FindMyWay from 'find-my-way';
import type { SecretBox } from '../secrets/secret-box.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { AppError, NotFoundError } from '../errors.ts';
import { ErrorBody } from '../schema.ts';
import { authenticate } from '../auth/authenticate.ts';
import { countFailedAuthentication, forwardingWatch, refuseBlockedAddress } from '../auth/auth-limit-hooks.ts';
import { AuthLimiter } from '../auth/auth-limiter.ts';
import { CredentialStore } from '../auth/credential-store.ts';
import { CredentialWriteWatch } from '../auth/credential-writes.ts';
import type { Principal } from '../auth/principal.ts';
import type { Permission } from '../auth/roles.ts';
import { handleError } from './error-handler.ts';
import { assertTextParts, parseJsonBody } from './input-rules.ts';
import { boundIntegers } from './schema-rules.ts';
import { validatorCompiler } from './validation.ts';
import { documentRoute, nameDiscriminatedVariants, withOrganizationHeader } from './openapi.ts';
import { metrics } from '../metrics/metrics.ts';
import { installAudit } from '../audit/recorder.ts';

type Observer = ReturnType<typeof metrics.httpDuration.labels>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route needs: a permission of the role matrix, or `authenticated` for any caller. */
    permission?: Permission | 'authenticated';
    /** Served without a credential (health, OpenAPI, OAuth callback). */
    public?: boolean;
    /** Takes run credentials (`plr_…`) as well as API keys: the state backend, which checks its own. */
    runCredentials?: boolean;
    /**
     * The path parameter that names the organization the request acts in, in place of X-Organization-Id
     * (the module registry's namespace: OpenTofu sends no such header). See authenticate.ts.
     */
    organizationParam?: string;
  }
  interface FastifyRequest {
    principal: Principal;
    /** How many credential-table writes the routes' database had sent when this request arrived. */
    credentialWritesAtStart: number;
  }
  interface FastifyInstance {
    db: Db;
    config: Config;
    /** Seals and opens secrets at rest (tokens, sensitive variables, state). */
    secrets: SecretBox;
    /** Credentials from memory where they can be (API keys, cloud accounts' ingest secrets). */
    credentials: CredentialStore;
  }
}

export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;
export type RoutePlugin = (app: App) => Promise<void>;

export interface AppOptions {
  db: Db;
  config: Config;
  logger?: FastifyBaseLogger;
  routes: RoutePlugin[];
  secrets: SecretBox;
  /**
   * Observe every request in http_request_duration_seconds: only in a process that serves metrics
   * (runPlinth starts its metrics listener first), so one that cannot be scraped pays nothing for it.
   */
  requestMetrics?: boolean;
  /** The database to LISTEN on for credential changes (defaults to config.databaseUrl); none: no credential cache. */
  listenUrl?: string;
  /** How long a resolved credential is served from memory (CREDENTIAL_CACHE_TTL_MS); tests lengthen it. */
  credentialCacheTtlMs?: number;
  /** @fastify/otel's plugin when tracing is on (platform/tracing.ts); absent, the app has no tracing hook at all. */
  tracingPlugin?: FastifyPluginCallback;
}

/** A request slower than this is logged at info even when it is a read that succeeded. */
const SLOW_REQUEST_MS = 1000;

/**
 * One access line per request, when it completes, with the fields an operator reads; Fastify's default
 * writes two per request with whole request and response objects, a cost every request pays. Reads that
 * succeed quickly (the CLI polls runs, steps and logs) are at debug, so that at info the log tells
 * what changed, what failed and what was slow.
 */
class AccessLog extends LogController {
  override incomingRequest() {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    const ms = Math.round(reply.elapsedTime);
    const routine = !error && request.method === 'GET' && reply.statusCode < 400 && ms < SLOW_REQUEST_MS;
    // A public route's query may carry a secret of someone else's (an OAuth code, a state): logged without it.
    const url = request.routeOptions.config?.public ? request.url.split('?')[0] : request.url;
    const fields = { method: request.method, url, statusCode: reply.statusCode, ms };
    if (error) reply.log.error({ ...fields, err: error }, 'request failed');
    else if (routine) reply.log.debug(fields, 'served request');
    else reply.log.info(fields, 'served request');
  }
}

/**
 * Empty bodies are allowed (rows such as approve and redeploy take none); anything else must be JSON
 * that obeys the input rules (input-rules.ts): limited depth, no NUL or lone surrogate, no prototype key.
 */
function parseJson(_req: unknown, body: string, done: (err: Error | null, value?: unknown) => void) {
  try {
    done(null, parseJsonBody(body));
  } catch (error) {
    done(error as Error);
  }
}

/** The request parts whose schemas the input rules bound (integers within PostgreSQL's range). */
const REQUEST_PARTS = ['body', 'querystring', 'params', 'headers'] as const;

/** buildApp assembles the HTTP API: conventions, authentication, the OpenAPI document and every domain's routes. */
export async function buildApp(options: AppOptions): Promise<App> {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    genReqId: () => randomUUID(),
    // request.ip, which the audit log records and failed authentications are counted by: the client's
    // address as a trusted proxy forwards it, else the connection's (PLINTH_TRUSTED_PROXIES).
    trustProxy: options.config.trustedProxies.length ? options.config.trustedProxies : false,
    bodyLimit: 1024 * 1024,
    exposeHeadRoutes: false,
    logController: new AccessLog(),
    // A URL Fastify cannot route (bad percent-encoding, a path parameter past maxParamLength) is an ErrorBody too.
    frameworkErrors: (error, request, reply) => {
      reply.header('X-Request-Id', request.id);
      return handleError(error, request, reply);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // OpenTofu's http state backend locks with these WebDAV methods (src/opentofu/state.routes.ts).
  app.addHttpMethod('LOCK', { hasBody: true });
  app.addHttpMethod('UNLOCK', { hasBody: true });
  if (options.tracingPlugin) await app.register(options.tracingPlugin);
  // Only the Git flows' browser binding uses cookies (git-servers/flow-binding.ts); credentials never do.
  await app.register(cookie);
  // The routes' database counts its writes of credential tables (the cache below forgets on them).
  const credentialWrites = new CredentialWriteWatch();
  app.decorate('db', options.db.withPlugin(credentialWrites));
  app.decorate('config', options.config);
  app.decorate('secrets', options.secrets);
  // Null until the credential hook sets it; declared up front so every request object has the same shape.
  app.decorateRequest('principal', null, []);
  app.decorateRequest('credentialWritesAtStart', 0);
  app.setValidatorCompiler(validatorCompiler);
  // Only JSON bodies: Fastify's default text/plain parser would hand a string to the schema (a 400); it is a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJson);
  app.addSchema(ErrorBody);
  app.setErrorHandler(handleError);

  const knownRoutes = FindMyWay();
  const operationIds = new Set<string>();
  // `this` is the plugin the route is registered in: its content-type parsers decide whether a 415 can happen.
  app.addHook('onRoute', function (this: FastifyInstance, route) {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const config = (route.config ?? {}) as { permission?: string; public?: boolean };
    if (!config.public && !config.permission && methods.some((m) => m !== 'GET')) {
      throw new Error(`${methods.join(',')} ${route.url} must declare a permission`);
    }
    for (const method of methods) knownRoutes.on(method as 'GET', route.url, () => {});
    for (const part of REQUEST_PARTS) boundIntegers(route.schema?.[part]);
    documentRoute(this, route, operationIds);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.0',
      info: { title: 'Plinth', version: '0.0.0', description: 'Multi-tenant infrastructure-deployment platform' },
      // Relative: the document describes the API that serves it, wherever that is.
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'An API key: plk_…' },
          basic: {
            type: 'http',
            scheme: 'basic',
            description: "The state backend's: the token (an API key or a run's plr_… credential) as the password, as OpenTofu sends it",
          },
        },
      },
      security: [{ bearer: [] }],
    },
    transform: withOrganizationHeader,
    transformObject: (documentObject) =>
      'openapiObject' in documentObject ? nameDiscriminatedVariants(documentObject.openapiObject) : documentObject.swaggerObject,
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? json.title ?? `def-${i}`) },
  });

  // A keep-alive connection whose request is in flight when close() starts would hold the shutdown
  // open until the client drops it: its response says Connection: close, so draining ends with it.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('Connection', 'close');
  });

  // Before any route is added: its onRoute hook gives the audited routes their hooks.
  installAudit(app, options.db);

  const credentials = new CredentialStore(options.db, {
    listenUrl: options.listenUrl ?? options.config.databaseUrl,
    log: options.logger,
    ttlMs: options.credentialCacheTtlMs,
  });
  await credentials.start();
  app.decorate('credentials', credentials);
  app.addHook('onClose', async () => credentials.close());
  const authLimiter = new AuthLimiter(options.config.authLimits);
  const watchForwarding = forwardingWatch();
  app.addHook('onRequest', async (request, reply) => {
    request.credentialWritesAtStart = credentialWrites.writes;
    reply.header('X-Request-Id', request.id);
    watchForwarding(request);
    // Every route that takes a credential, the public ones that check their own (the state backend) too.
    refuseBlockedAddress(authLimiter, request);
    if (request.is404 || request.routeOptions.config.public) return;
    await authenticate(credentials, request);
  });
  app.addHook('onError', async (request, _reply, error) => countFailedAuthentication(authLimiter, request, error));
  // A request that wrote a credential table (or ran beside one that did): this process forgets its
  // cached credentials before the caller hears back, so the caller's next request sees the change
  // (other processes hear of it through NOTIFY). Any other request leaves the cache as it is.
  app.addHook('onSend', async (request) => {
    if (credentialWrites.writes !== request.credentialWritesAtStart) credentials.invalidate();
  });

  // The histogram's child per method, route and status, looked up by one string: prom-client would
  // otherwise sort and join the labels on every request.
  const durations = new Map<string, Observer>();
  if (options.requestMetrics)
    app.addHook('onResponse', (request, reply, done) => {
      // The route's template, never its URL: ids must not become label values.
      const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
      const key = `${request.method} ${reply.statusCode} ${route}`;
      let observer = durations.get(key);
      if (!observer) {
        observer = metrics.httpDuration.labels({ method: request.method, route, status_code: reply.statusCode });
        durations.set(key, observer);
      }
      observer.observe(reply.elapsedTime / 1000);
      done();
    });

  // Path and query text obeys the same rule as body text; the body's was checked by its parser.
  app.addHook('preValidation', async (request) => {
    assertTextParts({ querystring: request.query, params: request.params });
  });

  app.setNotFoundHandler((request) => {
    const path = request.url.split('?')[0];
    const allowed = (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).filter((m) => knownRoutes.find(m, path));
    if (allowed.length > 0) {
      throw new AppError(405, 'Api:Request:METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}`, {
        metadata: { allow: allowed.join(', ') },
      });
    }
    throw new NotFoundError('Route', `${request.method} ${path}`);
  });

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
  for (const plugin of options.routes) await app.register(plugin);
  await app.ready();
  return app;
}
