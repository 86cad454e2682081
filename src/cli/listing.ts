// How every list command reads its list: newest first by default, at most --limit items (only the pages
// needed), or --all of them.

import { Option, type Command } from 'commander';
import type { ListItem, ListParams, ListPath, Plinth } from '@plinth/sdk';
import { UsageError } from './exit-codes.ts';
import type { Column } from './output.ts';
import type { Session } from './session.ts';

export const DEFAULT_LIMIT = 50;
const SORTS = ['newest', 'oldest'] as const;

export interface ListFlags {
  limit?: number;
  all?: boolean;
  sort?: (typeof SORTS)[number];
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit takes a whole number of at least 1, not "${value}"`);
  return limit;
}

function parseSort(value: string): ListFlags['sort'] {
  const sort = value.toLowerCase();
  if (!(SORTS as readonly string[]).includes(sort)) throw new UsageError(`--sort is one of ${SORTS.join(', ')}, not "${value}"`);
  return sort as ListFlags['sort'];
}

/** withListOptions gives a list command --limit, --all and --sort. */
export function withListOptions(command: Command): Command {
  return command
    .addOption(new Option('--limit <n>', `show at most this many (default ${DEFAULT_LIMIT})`).argParser(parseLimit))
    .option('--all', 'show every one (reads page after page)')
    .addOption(new Option('--sort <order>', `${SORTS.join(' or ')} first (default newest)`).argParser(parseSort));
}

/** A list as read: the items, and whether more exist beyond --limit. */
export interface Listed<T> {
  items: T[];
  more: boolean;
}

/** readList reads up to the limit (or everything with --all) in the order asked, a page at a time. */
export async function readList<P extends ListPath>(plinth: Plinth, path: P, params: ListParams<P>, flags: ListFlags): Promise<Listed<ListItem<P>>> {
  const want = flags.all ? Infinity : (flags.limit ?? DEFAULT_LIMIT);
  const order = flags.sort === 'oldest' ? 'asc' : 'desc';
  const pageSize = Math.min(200, want);
  const query = { ...(params.query ?? {}), order, limit: pageSize };
  const items: ListItem<P>[] = [];
  for await (const page of plinth.pages(path, { ...params, query } as unknown as ListParams<P>)) {
    items.push(...page.data);
    if (items.length >= want) return { items: items.slice(0, want), more: items.length > want || page.meta.nextCursor !== undefined };
  }
  return { items, more: false };
}

/** printList prints a list and, on a table cut short by --limit, says on stderr how to see the rest. */
export function printList<T>(s: Session, listed: Listed<T>, columns: Column<T>[]) {
  s.out.list(listed.items, columns);
  if (listed.more && s.out.human) s.out.info(`(${listed.items.length} shown; more exist: --limit <n> or --all)`);
}
