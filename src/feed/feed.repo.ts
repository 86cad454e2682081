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

/** The feed as of now: every transaction older than this one still running, none of its entries sent. */
export async function feedHorizon(db: Executor): Promise<FeedCursor> {
  const { rows } = await sql<{ xid: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as xid`.execute(db);
  return { xid: rows[0].xid, seq: '0' };
}

/**
 * The organization's entries after `after`, oldest first, of transactions that have all ended: one that
 * commits later has a higher xid than any entry returned, so it is read next time, never skipped.
 */
export async function readFeedEntries(db: Executor, organizationId: string, after: FeedCursor, filter: FeedFilter, limit: number): Promise<FeedEntry[]> {
  const rows = await db
    .selectFrom('feed_entries')
    .select([sql<string>`xid::text`.as('xid'), sql<string>`seq::text`.as('seq'), 'kind', 'record_id'])
    .where('organization_id', '=', organizationId)
    .where(sql<boolean>`(xid, seq) > (${after.xid}::xid8, ${after.seq}::bigint)`)
    .where(sql<boolean>`xid < pg_snapshot_xmin(pg_current_snapshot())`)
    .$if(filter.moduleInstanceId !== undefined, (q) => q.where('module_instance_id', '=', filter.moduleInstanceId!))
    .$if(filter.environmentId !== undefined, (q) => q.where('environment_id', '=', filter.environmentId!))
    .orderBy('xid')
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ xid: r.xid, seq: r.seq, kind: r.kind, recordId: r.record_id }));
}

/** Deletes up to `limit` entries written before `before`; answers how many it deleted. */
export async function deleteFeedEntriesBefore(db: Executor, before: Date, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('feed_entries')
    .where(sql<boolean>`(xid, seq) in (select xid, seq from feed_entries where created_at < ${before} limit ${limit} for update skip locked)`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function hasFeedEntriesBefore(db: Executor, before: Date): Promise<boolean> {
  return (await db.selectFrom('feed_entries').select('seq').where('created_at', '<', before).limit(1).executeTakeFirst()) !== undefined;
}
