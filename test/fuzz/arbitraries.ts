import fc from 'fast-check';
import { resolve, urlOf, type JsonSchema, type OpenApiDoc, type Operation } from './openapi.ts';

/**
 * fast-check arbitraries for requests generated from the OpenAPI document: a request that its schema
 * would accept, then one hostile change (a value, a key, the body text, the content type, a query or
 * path parameter, a header). The properties the suite checks hold for all of them.
 */

/** Ids the server knows (of this organization and of another), so valid-looking requests reach past 404. */
export interface IdPool {
  own: string[];
  foreign: string[];
}

function stringArb(schema: JsonSchema, key: string, ids: IdPool): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 24, 24);
  if (schema.enum) return fc.constantFrom(...(schema.enum as string[]));
  if (schema.format === 'date-time') return fc.integer({ min: 1, max: 3650 }).map((d) => new Date(Date.now() + d * 86400000).toISOString());
  if (schema.format === 'email') return fc.constantFrom('a@example.com', 'fuzz@example.com');
  if (/id$/i.test(key) && ids.own.length > 0)
    return fc.oneof(fc.constantFrom(...ids.own, ...ids.foreign), fc.string({ minLength: Math.max(min, 1), maxLength: max }));
  if (schema.pattern) {
    return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= min && s.length <= (schema.maxLength ?? 1e9));
  }
  return fc.string({ minLength: min, maxLength: Math.max(min, max) });
}

/**
 * A value its schema accepts (as far as the schema alone says): objects, arrays, unions, scalars. A
 * recursive schema (InputProperty holds InputProperty) is expanded one level: below that, only its
 * variants without references, so building the arbitrary stays cheap.
 */
export function validValue(doc: OpenApiDoc, raw: JsonSchema, ids: IdPool, key = '', refs: string[] = []): fc.Arbitrary<unknown> {
  const ref: string | undefined = raw.$ref;
  const inside = ref ? [...refs, ref] : refs;
  const leafOnly = ref !== undefined && refs.includes(ref);
  const schema = resolve(doc, raw);
  const nullable = (arb: fc.Arbitrary<unknown>) =>
    schema.nullable ? fc.oneof({ weight: 5, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) }) : arb;
  const child = (sub: JsonSchema, name: string) => validValue(doc, sub, ids, name, inside);
  const variants: JsonSchema[] | undefined = schema.oneOf ?? schema.anyOf;
  if (variants) {
    const leaves = variants.filter((v) => !JSON.stringify(resolve(doc, v)).includes('"$ref"'));
    const usable = leafOnly && leaves.length > 0 ? leaves : variants;
    return fc.oneof(...usable.map((v) => child(v, key)));
  }
  if (leafOnly) return fc.constant({});
  if (schema.enum) return nullable(fc.constantFrom(...schema.enum));
  switch (schema.type) {
    case 'string':
      return nullable(stringArb(schema, key, ids));
    case 'integer':
      return nullable(fc.integer({ min: Math.max(schema.minimum ?? -1000, -1000), max: Math.min(schema.maximum ?? 1000, 1000) }));
    case 'number':
      return nullable(fc.integer({ min: -1000, max: 1000 }).map((n) => n / 4));
    case 'boolean':
      return nullable(fc.boolean());
    case 'array': {
      const minLength = schema.minItems ?? 0;
      return nullable(fc.array(child(schema.items ?? {}, key), { minLength, maxLength: Math.max(minLength, Math.min(schema.maxItems ?? 2, 2)) }));
    }
    case 'object':
    case undefined: {
      const properties: Record<string, JsonSchema> = schema.properties ?? {};
      if (Object.keys(properties).length === 0) {
        if (schema.type === undefined && !schema.additionalProperties) return fc.jsonValue({ maxDepth: 2 });
        return nullable(fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }));
      }
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, sub] of Object.entries(properties)) record[name] = child(sub, name);
      return nullable(fc.record(record, { requiredKeys: (schema.required ?? []) as string[] }));
    }
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

/** Placeholders replaced in the body text after JSON.stringify, for values JSON.stringify cannot write. */
const DEEP_10000 = '"\u0001DEEP10000\u0001"';
const DEEP_65 = '"\u0001DEEP65\u0001"';

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('a\u0000b', '\u0000', 'x\ud800', '\udc00y', '\ud800\u0000'),
  fc.constantFrom('x'.repeat(200_000), 'x'.repeat(1_100_000)),
  fc.constantFrom(DEEP_10000.slice(1, -1), DEEP_65.slice(1, -1)),
  // biome-ignore lint/correctness/noPrecisionLoss: a number past 2^53, as a hostile client sends it
  fc.constantFrom(2147483648, -2147483649, 9007199254740993, 1e308, -1e308, -1, 0, 1.5, 2 ** 63),
  fc.constantFrom<unknown>(true, null, [], {}, 'text', 12, [null], { a: 1 }),
);

const prototypeKey = fc.constantFrom('__proto__', 'constructor', 'prototype', 'surprise', 'id', 'organizationId', 'k\u0000', 'k\ud800');

/** Every place in a value a change can go: the value itself, each property and item, below MAX_DEPTH. */
function slots(value: unknown, path: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(path);
  if (path.length > 6) return out;
  if (Array.isArray(value)) value.forEach((v, i) => slots(v, [...path, i], out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) slots(v, [...path, k], out);
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy: any = Array.isArray(root) ? [...root] : { ...(root as object) };
  copy[path[0]] = setAt(copy[path[0]], path.slice(1), value);
  return copy;
}

function addKeyAt(root: unknown, path: (string | number)[], key: string): unknown {
  if (path.length === 0) {
    if (root === null || typeof root !== 'object' || Array.isArray(root)) return root;
    const copy = { ...(root as object) };
    // defineProperty makes `__proto__` an own key that JSON.stringify writes, as a hostile client would send it.
    Object.defineProperty(copy, key, { value: { polluted: true }, enumerable: true, configurable: true, writable: true });
    return copy;
  }
  const copy: any = Array.isArray(root) ? [...root] : { ...(root as object) };
  copy[path[0]] = addKeyAt(copy[path[0]], path.slice(1), key);
  return copy;
}

export interface FuzzRequest {
  method: Operation['method'];
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** What was changed, for the failure message. */
  change: string;
  /** The statuses the OpenAPI document lists for the operation. */
  documented: string[];
}

function bodyText(body: unknown): string {
  return JSON.stringify(body)
    .replace(JSON.stringify(DEEP_10000.slice(1, -1)), '['.repeat(10000) + ']'.repeat(10000))
    .replace(JSON.stringify(DEEP_65.slice(1, -1)), '{"a":'.repeat(65) + '1' + '}'.repeat(65));
}

const hostileQueryValue = fc.oneof(
  fc.constantFrom('%00', 'a%00b', '%ED%A0%80', '%FF', 'x'.repeat(2000), '2147483648', '-2147483649', '99999999999999999999', '1e400', '-0', 'NaN', 'true', ''),
  fc
    .constantFrom({ k: 'a\u0000' }, { k: '99999999999999999999' }, { k: 12 }, { k: '../../etc' }, { k: 'x'.repeat(100) }, null, [1])
    .map((v) => Buffer.from(JSON.stringify(v)).toString('base64url')),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
);

const hostilePathValue = fc.constantFrom(
  'a%00b',
  '%00',
  '%ED%A0%80',
  'x'.repeat(65),
  '..',
  '%2e%2e',
  'null',
  '0',
  '-1',
  '99999999999999999999',
  '%F0%9F%92%A9',
  'a%20b',
);

/** A request for the operation that its schema would accept, before any change. */
function baseRequest(doc: OpenApiDoc, op: Operation, ids: IdPool) {
  const params = fc.record(Object.fromEntries(op.pathParams.map((name) => [name, fc.constantFrom(...ids.own, ...ids.foreign)])));
  const query = fc.record(Object.fromEntries(op.query.filter((q) => q.name !== 'follow').map((q) => [q.name, validValue(doc, q.schema, ids, q.name)])), {
    requiredKeys: op.query.filter((q) => q.required).map((q) => q.name),
  });
  const body = op.body ? validValue(doc, op.body, ids) : fc.constant(undefined);
  return fc.record({ params, query, body });
}

function queryString(query: Record<string, unknown>, raw: Record<string, string> = {}): string {
  const parts = Object.entries(query)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  for (const [k, v] of Object.entries(raw)) parts.push(`${k}=${v}`);
  return parts.join('&');
}

type Change =
  | { kind: 'value'; slot: number; value: unknown }
  | { kind: 'key'; slot: number; key: string }
  | { kind: 'text'; text: string }
  | { kind: 'content-type'; type: string }
  | { kind: 'query'; name: string; value: string }
  | { kind: 'path'; value: string }
  | { kind: 'org-header'; value: string };

const change: fc.Arbitrary<Change> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('value' as const), slot: fc.nat(), value: hostileValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('key' as const), slot: fc.nat(), key: prototypeKey }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('text' as const),
      text: fc.constantFrom('{"data": {', '{data: {}}', 'nul', '[]', 'null', '"x"', '{"data": {}} x', '\u0000', '{"a":"\\ud800"}'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('content-type' as const),
      type: fc.constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/xml',
        'multipart/form-data; boundary=x',
        'application/json; charset=utf-16',
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('query' as const),
      name: fc.constantFrom('cursor', 'limit', 'projectId', 'attemptEpoch', 'pipelineId', 'unknown', 'after', '__proto__'),
      value: hostileQueryValue,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('path' as const), value: hostilePathValue }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('org-header' as const), value: fc.constantFrom('x'.repeat(65), 'has space', '', 'no-such-org', '0') }),
  },
);

/** fuzzRequest: a valid-looking request for the operation with one hostile change. */
export function fuzzRequest(doc: OpenApiDoc, op: Operation, ids: IdPool): fc.Arbitrary<FuzzRequest> {
  return fc.tuple(baseRequest(doc, op, ids), change).map(([base, c]) => {
    const headers: Record<string, string> = {};
    let params = base.params as Record<string, string>;
    let query = queryString(base.query as Record<string, unknown>);
    let body: unknown = base.body;
    let payload: string | undefined;
    if (c.kind === 'value' && body !== undefined) {
      const all = slots(body);
      body = setAt(body, all[c.slot % all.length], c.value);
    } else if (c.kind === 'key' && body !== undefined) {
      const objects = slots(body);
      body = addKeyAt(body, objects[c.slot % objects.length], c.key);
    } else if (c.kind === 'query') {
      query = queryString(base.query as Record<string, unknown>, { [c.name]: c.value });
    } else if (c.kind === 'path' && op.pathParams.length > 0) {
      params = { ...params, [op.pathParams[0]]: c.value };
    } else if (c.kind === 'org-header') {
      headers['x-organization-id'] = c.value;
    }
    if (body !== undefined) payload = bodyText(body);
    if (c.kind === 'text') payload = c.text;
    if (payload !== undefined) headers['content-type'] = c.kind === 'content-type' ? c.type : 'application/json';
    return { method: op.method, url: urlOf(op, params, query), headers, payload, change: JSON.stringify(c).slice(0, 300), documented: op.statuses };
  });
}
