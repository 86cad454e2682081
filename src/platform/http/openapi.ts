import type { FastifyInstance, RouteOptions } from 'fastify';

/**
 * What the OpenAPI document says of a route beyond its own schema, derived from how the route is
 * declared so that a new route is documented right without declaring anything: its operationId, the
 * error statuses it can answer (each an ErrorBody), its security and the X-Organization-Id header.
 * A route adds what only its service knows (a 409, a 422, an upstream 502) with `errorResponses`, and
 * names itself with `operationId` where the derived name is not what a reader would call it.
 */

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 504;

/** Bodies larger than this are a 413 on every route that does not set a bodyLimit of its own. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'The request is malformed or fails its schema or an input rule; `details` names each offending field',
  401: 'No credential, or an unknown, revoked or expired one',
  403: 'The role lacks the permission, or X-Organization-Id names an organization the caller is not a member of',
  404: 'Not found, or in another organization (which is never revealed)',
  409: 'The request conflicts with the current state',
  413: 'The body is over the size limit',
  415: 'The body is not JSON: send `Content-Type: application/json`',
  422: 'Well-formed, but breaks a rule; `details` lists every problem',
  429: 'Too many failed authentications from this address (answered to every request that carries a credential): wait the seconds `Retry-After` says',
  500: 'Internal error; its cause is shown only to a super-administrator',
  502: 'An upstream server cannot be reached, or answered with something that is not what it should',
  504: 'An upstream server did not answer in time',
};

const RETRY_AFTER = { 'Retry-After': { type: 'integer', minimum: 1, description: 'Seconds to wait before trying again' } };

/** One error response: an ErrorBody, described (a route may say more precisely when it happens). */
export function errorResponse(status: ErrorStatus, description = ERROR_DESCRIPTIONS[status]) {
  return { $ref: 'ErrorBody#', description, ...(status === 429 ? { headers: RETRY_AFTER } : {}) };
}

/**
 * The error responses a route adds to the derived ones: `{409: 'A stack with this givenId exists'}`, a
 * status with `true` for its usual description, or `false` for a derived status the route never answers
 * (the push webhook answers 401, not 404, for an unknown code source). Spread into the route's `response`.
 */
export function errorResponses(statuses: Partial<Record<ErrorStatus, string | boolean>>) {
  return Object.fromEntries(
    Object.entries(statuses).map(([status, description]) => {
      const code = Number(status) as ErrorStatus;
      if (description === false) return [code, false];
      return [code, errorResponse(code, description === true ? undefined : description)];
    }),
  );
}

export const ORGANIZATION_HEADER = 'X-Organization-Id';
const ORGANIZATION_HEADER_SCHEMA = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_-]+$',
  description:
    'The organization the request acts in, for a user key: the user must be a member of it (else 403), or a ' +
    'super-administrator. Absent: the organization the key was created in. A service-account key always acts in its ' +
    'own organization and ignores it; present but not an organization id, it is a 400 for every key.',
};

interface RouteConfig {
  public?: boolean;
  runCredentials?: boolean;
  organizationParam?: string;
}

type RouteSchema = Record<string, unknown> & {
  body?: { properties?: { data?: { properties?: Record<string, { type?: string }> } } };
  querystring?: unknown;
  params?: unknown;
  headers?: { properties?: Record<string, unknown>; type?: string } & Record<string, unknown>;
  response?: Record<string, unknown>;
  operationId?: string;
  security?: readonly Record<string, readonly string[]>[];
};

/** A route takes a credential unless it is public; a public route that checks its own (the state backend) takes one too. */
function takesCredential(config: RouteConfig): boolean {
  return !config.public || config.runCredentials === true;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A body field that names another resource (`projectId`, `pipelineId`, …): missing or another organization's, a 404. */
function namesAResource(schema: RouteSchema): boolean {
  const fields = schema.body?.properties?.data?.properties ?? {};
  return Object.entries(fields).some(([name, field]) => /Id$/.test(name) && name !== 'givenId' && field.type === 'string');
}

/**
 * The statuses a route can answer whatever its service does: the input rules (on every query string) and the schemas (400),
 * authentication and the role (401, 403), an address blocked for failed authentications (429), the ids in its
 * path and body (404), the body parser (413, and 415 unless the route's plugin takes every type), and 500.
 */
export function derivedErrorStatuses(
  route: Pick<RouteOptions, 'method' | 'url'> & { schema?: RouteSchema; config?: RouteConfig },
  acceptsAnyBody = false,
): ErrorStatus[] {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const schema = route.schema ?? {};
  const config = route.config ?? {};
  // 400: the input rules check every query string, declared or not. 429: an address blocked for failed
  // authentications is refused on every route while it sends a credential.
  const statuses = new Set<ErrorStatus>([400, 429, 500]);
  const hasBody = methods.some((m) => BODY_METHODS.has(m));
  if (takesCredential(config)) for (const s of [401, 403] as const) statuses.add(s);
  if (route.url.includes(':') || namesAResource(schema)) statuses.add(404);
  if (hasBody) statuses.add(413);
  if (hasBody && !acceptsAnyBody) statuses.add(415);
  return [...statuses].sort((a, b) => a - b);
}

function mib(bytes: number): string {
  return `${bytes / (1024 * 1024)} MiB`;
}

// ---------------------------------------------------------------------------------------------------
// operationId

const VERBS: Record<string, string> = { GET: 'get', POST: 'create', PUT: 'set', PATCH: 'update', DELETE: 'delete' };

const pascal = (segment: string) => segment.replace(/(^|[-_])([a-z0-9])/g, (_m, _sep, c: string) => c.toUpperCase());

function singular(word: string): string {
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/**
 * The operationId a route gets unless it names itself: `GET /stacks` listStacks, `POST /stacks`
 * createStack, `GET|PATCH|DELETE /stacks/:id` getStack, updateStack, deleteStack; a collection under
 * an item is named by both (`GET /stacks/:id/state-versions` listStackStateVersions), and a one-word
 * action on an item is its verb (`POST /pipeline-runs/:id/cancel` cancelPipelineRun).
 */
export function deriveOperationId(method: string, url: string): string {
  const segments = url.split('/').filter(Boolean);
  const isParam = (i: number) => segments[i]?.startsWith(':') === true;
  const words: string[] = [];
  segments.forEach((segment, i) => {
    if (!isParam(i)) words.push(isParam(i + 1) ? singular(pascal(segment)) : pascal(segment));
  });
  const last = segments.length - 1;
  const action = segments[last];
  if (method === 'POST' && last >= 1 && isParam(last - 1) && /^[a-z]+$/.test(action)) return action + words.slice(0, -1).join('');
  if (isParam(last)) return (VERBS[method] ?? method.toLowerCase()) + words.join('');
  if (method === 'GET') return `list${words.join('')}`;
  words[words.length - 1] = singular(words[words.length - 1]);
  return (method === 'POST' ? 'create' : (VERBS[method] ?? method.toLowerCase())) + words.join('');
}

const CAMEL_CASE = /^[a-z][a-zA-Z0-9]*$/;

// ---------------------------------------------------------------------------------------------------
// The route hook and the document's transforms

/**
 * documentRoute completes a route's schema as it is registered (called from the app's onRoute hook, with
 * the plugin instance the route belongs to): its operationId, checked camelCase and unique among
 * `taken`; its error responses, derived and declared (the declared win); `security: []` when public.
 */
export function documentRoute(instance: FastifyInstance, route: RouteOptions, taken: Set<string>): void {
  const schema = (route.schema ?? {}) as RouteSchema;
  const config = (route.config ?? {}) as RouteConfig;
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const operationId = schema.operationId ?? deriveOperationId(methods[0], route.url);
  if (!schema.hide) {
    if (!CAMEL_CASE.test(operationId)) throw new Error(`${route.url}: operationId ${operationId} is not camelCase`);
    if (taken.has(operationId)) throw new Error(`${methods.join(',')} ${route.url}: operationId ${operationId} is taken; give the route its own`);
    taken.add(operationId);
  }
  // A plugin without the JSON parser takes its bodies as bytes of any type (the state backend): no 415.
  const acceptsAnyBody = !instance.hasContentTypeParser('application/json');
  const derived = derivedErrorStatuses({ method: route.method, url: route.url, schema, config }, acceptsAnyBody);
  const errors = Object.fromEntries(derived.map((status) => [status, errorResponse(status)]));
  if (errors[413]) errors[413] = errorResponse(413, `The body is over ${mib(route.bodyLimit ?? DEFAULT_BODY_LIMIT)}`);
  const schemes: Record<string, string[]>[] = config.runCredentials ? [{ basic: [] }, { bearer: [] }] : [];
  const security = config.public ? { security: schemes } : {};
  const response = Object.fromEntries(Object.entries({ ...errors, ...(schema.response ?? {}) }).filter(([, value]) => value !== false));
  route.schema = { ...schema, operationId, ...security, response };
}

/**
 * The X-Organization-Id header on every operation that takes a credential, in the document only: the
 * header is read (and a malformed one refused) by authentication, before any schema validator runs.
 */
export function withOrganizationHeader({ schema, url, route }: { schema: unknown; url: string; route: RouteOptions }) {
  const config = (route.config ?? {}) as RouteConfig;
  const routeSchema = (schema ?? {}) as RouteSchema;
  if (!takesCredential(config)) return { schema: routeSchema, url };
  const headers = routeSchema.headers ?? { type: 'object', properties: {} };
  const header = config.organizationParam
    ? {
        ...ORGANIZATION_HEADER_SCHEMA,
        description: `Ignored: the \`${config.organizationParam}\` path parameter names the organization the request acts in (a key that cannot act there gets a 404)`,
      }
    : ORGANIZATION_HEADER_SCHEMA;
  return {
    schema: { ...routeSchema, headers: { ...headers, properties: { ...(headers.properties ?? {}), [ORGANIZATION_HEADER]: header } } },
    url,
  };
}

type JsonObject = Record<string, unknown>;

/**
 * A discriminated `oneOf` whose variants are inline cannot be told apart by code generators, which
 * select a variant by its schema name: each variant becomes a component of its own
 * (`InputProperty` + `String` → InputPropertyString) and the discriminator maps its values to them.
 */
export function nameDiscriminatedVariants<T extends { components?: { schemas?: object } }>(doc: T): T {
  const schemas = (doc.components?.schemas ?? {}) as Record<string, JsonObject>;
  for (const [name, schema] of Object.entries(schemas)) {
    const discriminator = schema.discriminator as { propertyName: string; mapping?: Record<string, string> } | undefined;
    const variants = schema.oneOf as JsonObject[] | undefined;
    if (!discriminator || !variants) continue;
    const mapping: Record<string, string> = {};
    schema.oneOf = variants.map((variant) => {
      if (variant.$ref) return variant;
      const property = (variant.properties as Record<string, { enum?: string[] }> | undefined)?.[discriminator.propertyName];
      const value = property?.enum?.length === 1 ? property.enum[0] : undefined;
      if (value === undefined) return variant;
      const variantName = name + pascal(value.toLowerCase());
      schemas[variantName] = variant;
      mapping[value] = `#/components/schemas/${variantName}`;
      return { $ref: mapping[value] };
    });
    if (Object.keys(mapping).length) schema.discriminator = { ...discriminator, mapping: { ...discriminator.mapping, ...mapping } };
  }
  return doc;
}
