// The live feed (docs/deployments.md#live-feed): deployments, their resources and domain events of an
// organization, as they are stored, to a stream that resumes where its client left off.

import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import type { FeedEntryKind } from '../platform/db/enums.ts';
import { BadRequestError, NotFoundError } from '../platform/errors.ts';
import { STREAM_KEEPALIVE_MS } from '../platform/http/event-stream.ts';
import { findDeployment, findResource, rowToDeployment, rowToResource } from '../deployments/deployments.repo.ts';
import { findDomainEvent } from '../domains/domains.repo.ts';
import { findEnvironmentById } from '../environments/environments.repo.ts';
import { findInstance } from '../modules/module-instances.repo.ts';
import type { DueCheck } from '../platform/due-poller.ts';
import { deleteFeedEntriesBefore, feedHorizon, hasFeedEntriesBefore, readFeedEntries, type FeedCursor, type FeedEntry, type FeedFilter } from './feed.repo.ts';

/** How long an entry stays in the feed: a client away for longer resumes without what it missed. */
export const FEED_RETENTION_HOURS = 24;
/** Entries read per query; the next query runs once the client has taken them. */
const FEED_PAGE = 200;
const PRUNE_BATCH = 5_000;

/** The SSE event name of each kind of entry. */
export const FEED_EVENT_NAMES: Record<FeedEntryKind, string> = {
  DEPLOYMENT: 'deployment',
  DEPLOYMENT_RESOURCE: 'deployment-resource',
  DOMAIN_EVENT: 'domain-event',
};

const MAX_XID = 2n ** 64n - 1n;
const MAX_SEQ = 2n ** 63n - 1n;

export function formatFeedCursor(cursor: FeedCursor): string {
  return `${cursor.xid}-${cursor.seq}`;
}

/** The cursor to resume after, from Last-Event-ID (an event id this feed sent), or a 400. */
export function parseFeedCursor(header: string | string[] | undefined): FeedCursor | undefined {
  if (header === undefined || header === '') return undefined;
  const match = /^(\d{1,20})-(\d{1,19})$/.exec(Array.isArray(header) ? header.join(',') : header);
  if (!match || BigInt(match[1]) > MAX_XID || BigInt(match[2]) > MAX_SEQ) {
    throw new BadRequestError('Last-Event-ID must be the id of an event this stream sent', ['last-event-id: not an event id of the live feed']);
  }
  return { xid: match[1], seq: match[2] };
}

/** checkFeedFilter: the instance and environment the filter names are the organization's, or a 404. */
async function checkFeedFilter(db: Db, principal: Principal, filter: FeedFilter): Promise<void> {
  if (filter.moduleInstanceId !== undefined && !(await findInstance(db, principal.organizationId, filter.moduleInstanceId))) {
    throw new NotFoundError('ModuleInstance', filter.moduleInstanceId);
  }
  if (filter.environmentId !== undefined && !(await findEnvironmentById(db, principal.organizationId, filter.environmentId))) {
    throw new NotFoundError('Environment', filter.environmentId);
  }
}

async function recordOf(db: Db, organizationId: string, entry: FeedEntry): Promise<unknown> {
  switch (entry.kind) {
    case 'DEPLOYMENT': {
      const row = await findDeployment(db, organizationId, entry.recordId);
      return row && rowToDeployment(row);
    }
    case 'DEPLOYMENT_RESOURCE': {
      const row = await findResource(db, organizationId, entry.recordId);
      return row && rowToResource(row);
    }
    case 'DOMAIN_EVENT':
      return findDomainEvent(db, organizationId, entry.recordId);
  }
}

/** A record changed several times in one page is sent once, as it is now, at its last entry's place. */
function lastOfEachRecord(entries: FeedEntry[]): FeedEntry[] {
  const last = new Map<string, number>();
  entries.forEach((e, i) => last.set(`${e.kind}/${e.recordId}`, i));
  return entries.filter((e, i) => last.get(`${e.kind}/${e.recordId}`) === i);
}

export interface FeedTarget {
  event(name: string, id: string, record: unknown): Promise<void>;
  keepAlive(): Promise<void>;
  closed(): boolean;
}

/**
 * openFeed checks the filter and answers where the stream starts: after `after`, or at now, taken
 * before the client hears the stream has opened (so that nothing it does after is missed).
 */
export async function openFeed(db: Db, principal: Principal, after: FeedCursor | undefined, filter: FeedFilter): Promise<FeedCursor> {
  await checkFeedFilter(db, principal, filter);
  return after ?? feedHorizon(db);
}

/**
 * followFeed sends the organization's changes after `start` as they are stored, polling every `pollMs`,
 * until the client goes away. Each carries its record as it is when sent: one deleted meanwhile is
 * skipped.
 */
export async function followFeed(db: Db, principal: Principal, start: FeedCursor, filter: FeedFilter, target: FeedTarget, pollMs = 250) {
  let cursor = start;
  let lastSent = Date.now();
  while (!target.closed()) {
    const entries = await readFeedEntries(db, principal.organizationId, cursor, filter, FEED_PAGE);
    for (const entry of lastOfEachRecord(entries)) {
      const record = await recordOf(db, principal.organizationId, entry);
      if (target.closed()) return;
      if (record) {
        await target.event(FEED_EVENT_NAMES[entry.kind], formatFeedCursor(entry), record);
        lastSent = Date.now();
      }
    }
    if (entries.length > 0) cursor = entries[entries.length - 1];
    if (entries.length === FEED_PAGE) continue;
    if (Date.now() - lastSent >= STREAM_KEEPALIVE_MS) {
      await target.keepAlive();
      lastSent = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Worker processes delete the feed's entries older than FEED_RETENTION_HOURS, a batch at a time. */
export function feedPruning(db: Db): DueCheck<true> {
  const cutoff = () => new Date(Date.now() - FEED_RETENTION_HOURS * 3_600_000);
  return {
    name: 'feed-pruning',
    claim: async () => ((await hasFeedEntriesBefore(db, cutoff())) ? true : undefined),
    run: async () => void (await deleteFeedEntriesBefore(db, cutoff(), PRUNE_BATCH)),
  };
}
