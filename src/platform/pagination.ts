import { sql, type SelectQueryBuilder, type StringReference } from 'kysely';
import { BadRequestError } from './errors.ts';
import type { OrderedPaginationQuery } from './schema.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** A decoded page request: rows strictly after `after` in key order (`desc`: newest first), at most `limit` of them. */
export interface PageRequest {
  limit: number;
  after?: string;
  order?: 'asc' | 'desc';
}

export interface PageMeta {
  limit: number;
  nextCursor?: string;
}

/** A cursor: the last key of a page, and `d` when the walk is newest first (the order is the walk's, not the next request's to choose). */
export function encodeCursor(lastKey: string, order: PageRequest['order'] = 'asc'): string {
  return Buffer.from(JSON.stringify(order === 'desc' ? { k: lastKey, d: 1 } : { k: lastKey }), 'utf8').toString('base64url');
}

/** Every key a cursor carries is an id (hex) or a serial number: anything else was not issued here. */
const CURSOR_KEY = /^[A-Za-z0-9_-]{1,64}$/;

export function decodeCursor(cursor: string): string {
  return decodeCursorOf(cursor).key;
}

function decodeCursorOf(cursor: string): { key: string; order: 'asc' | 'desc' } {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const { k, d } = (parsed && typeof parsed === 'object' ? parsed : {}) as { k?: unknown; d?: unknown };
    if (typeof k === 'string' && CURSOR_KEY.test(k) && (d === undefined || d === 1)) return { key: k, order: d === 1 ? 'desc' : 'asc' };
  } catch {
    // fall through to the typed error
  }
  throw new BadRequestError('The cursor is not one this service issued', ['cursor: does not decode'], 'Api:Cursor:INVALID');
}

/** A key of a serial (bigint) column: decimal digits within PostgreSQL's bigint, or a 400 like any forged cursor. */
export function serialCursorKey(key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  if (/^[0-9]{1,19}$/.test(key) && BigInt(key) <= 9223372036854775807n) return key;
  throw new BadRequestError('The cursor is not one this service issued', ['cursor: does not decode'], 'Api:Cursor:INVALID');
}

/** pageRequest turns the `cursor`/`limit` query into a bounded page: a larger limit is clamped, below 1 is 400. */
export function pageRequest(query: OrderedPaginationQuery): PageRequest {
  const { cursor, limit, order } = query;
  if (limit !== undefined && limit !== null && limit < 1) {
    throw new BadRequestError('limit must be at least 1', ['limit: must be >= 1'], 'Api:Request:INVALID');
  }
  const applied = Math.min(limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  const direction = order === 'desc' ? { order } : {};
  if (!cursor) return { limit: applied, ...direction };
  const decoded = decodeCursorOf(cursor);
  // A cursor continues the walk that gave it: read in the other order, it would skip or repeat rows.
  if (decoded.order !== (order ?? 'asc'))
    throw new BadRequestError(
      `The cursor continues a walk ${decoded.order === 'desc' ? 'newest' : 'oldest'} first: send order=${decoded.order} with it`,
      ['order: not the order of the cursor'],
      'Api:Cursor:INVALID',
    );
  return { limit: applied, after: decoded.key, ...direction };
}

/**
 * keyset restricts a query to one page ordered by a unique, time-ordered key column, oldest or newest first. It fetches one row
 * more than asked, so `toPage` can tell whether another page exists without counting: a page costs the
 * same at row one million as at row one. `keyColumn` must name a column of the query's tables: a
 * misspelt one does not type-check (the query is then not a valid argument).
 */
export function keyset<K extends string>(page: PageRequest, keyColumn: K) {
  return <DB, TB extends keyof DB, O>(qb: K extends StringReference<DB, TB> ? SelectQueryBuilder<DB, TB, O> : never): SelectQueryBuilder<DB, TB, O> => {
    const query: SelectQueryBuilder<DB, TB, O> = qb;
    const key = sql.ref(keyColumn);
    const descending = page.order === 'desc';
    const ordered = query.orderBy(key, descending ? 'desc' : 'asc').limit(page.limit + 1);
    return page.after === undefined ? ordered : ordered.where(key, descending ? '<' : '>', page.after);
  };
}

/** toPage cuts the extra row fetched by `keyset` and derives the next cursor from the last row kept. */
export function toPage<T>(rows: T[], page: PageRequest, keyOf: (row: T) => string): { items: T[]; meta: PageMeta } {
  if (rows.length <= page.limit) return { items: rows, meta: { limit: page.limit } };
  const items = rows.slice(0, page.limit);
  return { items, meta: { limit: page.limit, nextCursor: encodeCursor(keyOf(items[items.length - 1]), page.order) } };
}
