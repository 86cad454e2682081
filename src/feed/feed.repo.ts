import { sql } from 'kysely';
import type { Executor } from '../platform/db/db.ts';
import type { FeedEntryKind } from '../platform/db/enums.ts';

/** A place in the feed: the writing transaction's id and the entry's seq, both 64-bit, as decimal text. */
export interface FeedCursor {
  xid: string;
  seq: string;
}

export interface FeedEntry extends FeedCursor {
  kind: FeedEntryKind;
  recordId: string;
}

export interface FeedFilter {
  moduleInstanceId?: string;
  environmentId?: string;
}

export interface FeedPage {
  entries: FeedEntry[];
  /**
   * Every transaction below this xid has ended (pg_snapshot_xmin of the page's own snapshot): once a
   * page holds all entries after the cursor below it, the reader may move on to it.
   */
  horizon: string;
}

/** The feed's bounds now: below `xmin` every transaction has ended; `xmax` is the next xid to be handed out. */
export async function feedBounds(db: Executor): Promise<{ xmin: string; xmax: string }> {
  const { rows } = await sql<{ xmin: string; xmax: string }>`
    select pg_snapshot_xmin(s)::text as xmin, pg_snapshot_xmax(s)::text as xmax from pg_current_snapshot() as s`.execute(db);
  return rows[0];
}

/**
 * The organization's entries after `after`, oldest first, of transactions that have all ended, and the
 * horizon they were read under, in one statement (one snapshot): a transaction that commits later has
 * an xid at or above the horizon, so its entries are read next time, never skipped.
 */
export async function readFeedPage(db: Executor, organizationId: string, after: FeedCursor, filter: FeedFilter, limit: number): Promise<FeedPage> {
  const instance = filter.moduleInstanceId === undefined ? sql`` : sql`and e.module_instance_id = ${filter.moduleInstanceId}`;
  const environment = filter.environmentId === undefined ? sql`` : sql`and e.environment_id = ${filter.environmentId}`;
  const { rows } = await sql<{ horizon: string; xid: string | null; seq: string | null; kind: FeedEntryKind | null; record_id: string | null }>`
    select h.horizon::text as horizon, p.xid::text as xid, p.seq::text as seq, p.kind, p.record_id
    from (select pg_snapshot_xmin(pg_current_snapshot()) as horizon) as h
    left join lateral (
      select e.xid, e.seq, e.kind, e.record_id from feed_entries as e
      where e.organization_id = ${organizationId} ${instance} ${environment}
        and (e.xid, e.seq) > (${after.xid}::xid8, ${after.seq}::bigint)
        and e.xid < h.horizon
      order by e.xid, e.seq
      limit ${limit}
    ) as p on true`.execute(db);
  const entries = rows.flatMap((r) => (r.xid && r.seq && r.kind && r.record_id ? [{ xid: r.xid, seq: r.seq, kind: r.kind, recordId: r.record_id }] : []));
  return { entries, horizon: rows[0].horizon };
}

/** Deletes up to `limit` entries written before `before`; answers how many it deleted. */
export async function deleteFeedEntriesBefore(db: Executor, before: Date, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('feed_entries')
    .where(sql<boolean>`(xid, seq) in (select xid, seq from feed_entries where created_at < ${before} limit ${limit} for update skip locked)`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
