// Every list of the API is `{data: T[], meta: {nextCursor?}}`: one loop follows the cursors, so no
// caller writes its own (and no caller stops at the first page by accident).

import type { paths } from './generated/openapi.js';

type GetPath = { [P in keyof paths]: paths[P] extends { get: { responses: { 200: unknown } } } ? P : never }[keyof paths];
type GetOk<P extends GetPath> = paths[P] extends { get: { responses: { 200: { content: { 'application/json': infer B } } } } } ? B : never;
type GetParams<P extends GetPath> = paths[P] extends { get: { parameters: infer Q } } ? Q : never;

/** The paths whose GET answers a page: `{data: [...], meta: {nextCursor?}}`. */
export type ListPath = { [P in GetPath]: GetOk<P> extends { data: unknown[]; meta: { nextCursor?: string } } ? P : never }[GetPath];
/** One item of a list path's pages. */
export type ListItem<P extends ListPath> = GetOk<P> extends { data: (infer T)[] } ? T : never;

type QueryOf<P extends ListPath> = GetParams<P> extends { query?: infer Q } ? Omit<NonNullable<Q>, 'cursor'> : never;
type PathParamsOf<P extends ListPath> = GetParams<P> extends { path: infer A } ? A : never;

/** What a list call takes besides the cursor: its path parameters and query filters (limit is the page size). */
export type ListParams<P extends ListPath> = (PathParamsOf<P> extends never ? { path?: undefined } : { path: PathParamsOf<P> }) & { query?: QueryOf<P> };

/** One page as a list call answers it. */
export interface Page<T> {
  data: T[];
  meta: { limit: number; nextCursor?: string; totalCount?: number };
}

/** pages follows `nextCursor` from the first page to the last, asking `fetchPage` for each. */
export async function* pages<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<Page<T>> {
  let cursor: string | undefined;
  const seen = new Set<string>();
  do {
    const page = await fetchPage(cursor);
    yield page;
    cursor = page.meta.nextCursor;
    // A server that hands back a cursor it already gave would loop forever: stop instead.
    if (cursor !== undefined && seen.has(cursor)) throw new Error(`the server repeated the cursor ${cursor}`);
    if (cursor !== undefined) seen.add(cursor);
  } while (cursor !== undefined);
}
