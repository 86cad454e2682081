// What an audit row keeps of a request's body: the fields its route names in `config.auditFields`,
// and nothing else. An allowlist, not a list of secret-looking names: a field added to a body later,
// or a secret under an innocent name (a sensitive variable's `value`), stays out of the log until
// someone decides it belongs there. Even an allowlisted text keeps no credentials: a URL in it loses
// its user-info, query and fragment. A field named with `:origin` (`webhookUrl:origin`) keeps only
// its URL's scheme, host and port: a webhook's URL (Slack's, Discord's, Teams') is its credential,
// path included.

import type { TSchema } from '@sinclair/typebox';

/** Past this size a diff keeps only its top-level field names. */
const MAX_DIFF_BYTES = 16 * 1024;
/** An allowlisted text longer than this (only a refused body can hold one) is cut. */
const MAX_TEXT = 4096;
/** An allowlisted list longer than this (only a refused body can hold one) is cut. */
const MAX_ITEMS = 200;

/** A URL's scheme: a letter, then at most 31 of these, then `://`. */
const SCHEME_CHAR = /^[a-z0-9+.-]$/i;
const MAX_SCHEME = 32;
const WORD_CHAR = /^\w$/;
const SPACE = /\s/g;
/** A host, or a host and a numeric port: anything else before the path (`alice:p` of `alice:p#ss@host`) may be a credential's head. */
const HOST_AND_PORT = /^(\[[^\]]*\]|[^:]*)(:\d*)?$/;

/**
 * Where the scheme ending at `sep` (the index of its `://`) starts, or -1 when none does: the leftmost
 * letter at a word boundary that only scheme characters, at most 32 in all, separate from `sep`.
 */
function schemeStart(text: string, sep: number): number {
  let start = -1;
  for (let i = sep - 1; i >= 0 && sep - i <= MAX_SCHEME && SCHEME_CHAR.test(text[i]); i--) {
    if (/^[a-z]$/i.test(text[i]) && (i === 0 || !WORD_CHAR.test(text[i - 1]))) start = i;
  }
  return start;
}

function withoutCredentials(scheme: string, rest: string): string {
  const beforeQuery = rest.split(/[?#]/, 1)[0];
  const kept = beforeQuery.slice(beforeQuery.lastIndexOf('@') + 1);
  const authority = kept.split('/', 1)[0];
  return scheme + (HOST_AND_PORT.test(authority) ? kept : kept.slice(authority.length));
}

/**
 * cleanText is a text as the audit log keeps it: every URL in it (a scheme, then everything up to a
 * space) without user-info, query or fragment. Its user-info is what comes before the last `@` ahead
 * of any `?` or `#`: taken generously, since a password may hold a `/`. The URLs are found from their
 * `://`, in one pass: a pattern that tries a scheme at every word boundary would scan `a-a-a-…` to its
 * end from each, quadratic in a text a refused body may send.
 */
export function cleanText(text: string): string {
  const input = text.slice(0, MAX_TEXT);
  let out = '';
  let copied = 0;
  let sep = input.indexOf('://');
  while (sep >= 0) {
    const start = schemeStart(input, sep);
    if (start < 0) {
      sep = input.indexOf('://', sep + 1);
      continue;
    }
    SPACE.lastIndex = sep + 3;
    const end = SPACE.exec(input)?.index ?? input.length;
    out += input.slice(copied, start) + withoutCredentials(input.slice(start, sep + 3), input.slice(sep + 3, end));
    copied = end;
    sep = input.indexOf('://', end);
  }
  return out + input.slice(copied);
}

/** The start of a text that is a URL: its scheme, and what comes before its path, query or fragment. */
const URL_ORIGIN = /^([a-z][a-z0-9+.-]{0,31}:\/\/)([^/\\?#\s]*)/i;
/** A host name or an IP literal, and a port: nothing a credential could hide in. */
const PLAIN_HOST = /^(\[[0-9a-f:.]*\]|[a-z0-9.-]+)(:\d{1,5})?$/i;

/**
 * originOf is what the audit log keeps of a URL that is an endpoint whose path may be its secret: its
 * scheme and, when it is a plain host and port, its authority without user-info. Not a URL (a refused
 * body's): nothing.
 */
export function originOf(text: string): string | undefined {
  const match = URL_ORIGIN.exec(text.slice(0, MAX_TEXT));
  if (!match) return undefined;
  const [, scheme, authority] = match;
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  return scheme + (PLAIN_HOST.test(host) ? host : '');
}

/** How a kept field's texts are kept: cleaned of credentials, or only their URL's origin. */
type Keep = 'text' | 'origin';
const MODES: Record<string, Keep> = { origin: 'origin' };

/**
 * A field path: keys from the body's `data`, `.`-separated; `key[]` steps into each item of a list;
 * a `:mode` after it says how its texts are kept.
 */
interface PathTree {
  [segment: string]: PathTree | Keep;
}

/** A field of an allowlist: its path, and its mode (undefined when it names one that does not exist). */
function parseField(field: string): { path: string; keep: Keep | undefined } {
  const colon = field.indexOf(':');
  const path = colon < 0 ? field : field.slice(0, colon);
  const mode = colon < 0 ? undefined : field.slice(colon + 1);
  return { path, keep: mode === undefined ? 'text' : Object.hasOwn(MODES, mode) ? MODES[mode] : undefined };
}

function treeOf(fields: readonly string[]): PathTree {
  const tree: PathTree = {};
  for (const field of fields) {
    const { path, keep } = parseField(field);
    const segments = path.split('.');
    let node = tree;
    for (const [i, segment] of segments.entries()) {
      if (i === segments.length - 1) {
        node[segment] = keep ?? 'origin';
        continue;
      }
      if (typeof node[segment] === 'string' || node[segment] === undefined) node[segment] = {};
      node = node[segment] as PathTree;
    }
  }
  return tree;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function scalar(value: unknown, keep: Keep): unknown {
  if (typeof value === 'string') return keep === 'origin' ? originOf(value) : cleanText(value);
  if (typeof value === 'boolean' || value === null) return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  return undefined;
}

/** A leaf keeps a scalar or a list of scalars; anything else (a refused body's object in a name's place) is left out. */
function leaf(value: unknown, keep: Keep): unknown {
  if (!Array.isArray(value)) return scalar(value, keep);
  const items = value.slice(0, MAX_ITEMS).map((item) => scalar(item, keep));
  return items.includes(undefined) ? undefined : items;
}

function project(value: unknown, tree: PathTree): Record<string, unknown> | undefined {
  if (!isPlainObject(value)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [segment, sub] of Object.entries(tree)) {
    const list = segment.endsWith('[]');
    const key = list ? segment.slice(0, -2) : segment;
    if (!Object.hasOwn(value, key)) continue;
    const child = value[key];
    let kept: unknown;
    if (typeof sub === 'string') kept = list && !Array.isArray(child) ? undefined : leaf(child, sub);
    else if (list) kept = Array.isArray(child) ? child.slice(0, MAX_ITEMS).map((item) => project(item, sub) ?? null) : undefined;
    else kept = project(child, sub);
    if (kept !== undefined) out[key] = kept;
  }
  return Object.keys(out).length ? out : undefined;
}

/**
 * auditDiff is what the audit log keeps of a request's body: the allowlisted `fields` of its `data`
 * that hold scalars (or lists of them), texts cleaned of credentials, cut down to its field names past
 * 16 KiB. Null without an allowlist, without a `data` object, or when none of the fields was sent.
 * The body may be a refused one (failed validation, forbidden): nothing here trusts its shape.
 */
export function auditDiff(body: unknown, fields: readonly string[] | undefined): Record<string, unknown> | null {
  if (!fields?.length || !isPlainObject(body)) return null;
  const kept = project(body.data, treeOf(fields));
  if (!kept) return null;
  if (JSON.stringify(kept).length <= MAX_DIFF_BYTES) return kept;
  return { truncated: true, fields: Object.keys(kept) };
}

/** The schemas a body schema allows at one of its `data` paths (several when it is a union); empty when none. */
export function fieldSchemas(body: TSchema | undefined, field: string): TSchema[] {
  let current: TSchema[] = body ? [body] : [];
  for (const segment of ['data', ...parseField(field).path.split('.')]) {
    const list = segment.endsWith('[]');
    const key = list ? segment.slice(0, -2) : segment;
    current = current.flatMap(branches).flatMap((s) => (s.properties?.[key] ? [s.properties[key] as TSchema] : []));
    if (list) current = current.flatMap(branches).flatMap((s) => (s.type === 'array' && s.items ? [s.items as TSchema] : []));
  }
  return current;
}

/** A schema's alternatives: itself, or each branch of its union. */
function branches(schema: TSchema): TSchema[] {
  const alternatives = (schema.anyOf ?? schema.oneOf ?? schema.allOf) as TSchema[] | undefined;
  return alternatives ? alternatives.flatMap(branches) : [schema];
}

/**
 * allowlistProblems says what is wrong with a route's audit allowlist: a field its body schema does not
 * have, one that is write-only there (a secret: a token, a password, a sensitive value), a mode that
 * does not exist, or a webhook's URL kept whole (its path may be its secret).
 */
export function allowlistProblems(body: TSchema | undefined, fields: readonly string[]): string[] {
  return fields.flatMap((field) => {
    const { path, keep } = parseField(field);
    if (!keep) return [`${field} names a mode that does not exist (${Object.keys(MODES).join(', ')})`];
    const schemas = fieldSchemas(body, field);
    if (!schemas.length) return [`${path} is not a field of its body`];
    if (schemas.flatMap(branches).some((s) => s.writeOnly === true)) return [`${path} is write-only (a secret)`];
    if (/webhook/i.test(path.split('.').at(-1)!) && keep !== 'origin')
      return [`${path} is a webhook's URL, whose path may be its secret: keep only its origin (${path}:origin)`];
    return [];
  });
}
