// The live feed (docs/deployments.md#live-feed): deployments, their resources and domain events of an
// organization, as they are stored, to a stream that resumes where its client left off.

import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import type { FeedEntryKind } from '../platform/db/enums.ts';
import { BadRequestError, NotFoundError } from '../platform/errors.ts';
import { STREAM_KEEPALIVE_MS, STREAM_MAX_MS } from '../platform/http/event-stream.ts';
import { findDeployment, findResource, rowToDeployment, rowToResource } from '../deployments/deployments.repo.ts';
import { findDomainEvent } from '../domains/domains.repo.ts';
import { findEnvironmentById } from '../environments/environments.repo.ts';
import { findInstance } from '../modules/module-instances.repo.ts';
import { Every } from '../platform/every.ts';
import type { Logger } from '../platform/logger.ts';
import { deleteFeedEntriesBefore, feedBounds, readFeedPage, type FeedCursor, type FeedEntry, type FeedFilter } from './feed.repo.ts';

/** How long an entry stays in the feed: a client away for longer resumes without what it missed. */
export const FEED_RETENTION_HOURS = 24;
/** Entries read per query; the next query runs once the client has taken them. */
const FEED_PAGE = 200;
/**
 * A page stops once its records (as JSON) reach this size: a deployment carries whole ECS task
 * definitions, whose size is the tenant's, and a stream holds one page for a client that reads nothing.
 */
const FEED_PAGE_MAX_BYTES = 256 * 1024;
const PRUNE_BATCH = 5_000;
const PRUNE_EVERY_MS = 10 * 60_000;

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
  // No leading zeros: PostgreSQL would read 010 as octal.
  const match = /^(0|[1-9]\d{0,19})-(0|[1-9]\d{0,18})$/.exec(Array.isArray(header) ? header.join(',') : header);
  if (!match || BigInt(match[1]) > MAX_XID || BigInt(match[2]) > MAX_SEQ) throw notAnEventId();
  return { xid: match[1], seq: match[2] };
}

function notAnEventId() {
  return new BadRequestError('Last-Event-ID and after must be an id this feed gave', ['last-event-id or after: not an id of the live feed']);
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

/**
 * openFeed checks the filter and answers where the stream starts: after `after`, or at now, taken
 * before the client hears the stream has opened (so that nothing it does after is missed). "Now" is
 * the oldest transaction still running: a change committed just before may be sent too.
 */
export async function openFeed(db: Db, principal: Principal, after: FeedCursor | undefined, filter: FeedFilter): Promise<FeedCursor> {
  await checkFeedFilter(db, principal, filter);
  const bounds = await feedBounds(db);
  // An xid not handed out yet is from no stream of this database: one would wait for it for ever.
  if (after && BigInt(after.xid) > BigInt(bounds.xmax)) throw notAnEventId();
  return after ?? { xid: bounds.xmin, seq: '0' };
}

export interface FeedEvent {
  /** deployment, deployment-resource or domain-event. */
  event: string;
  /** Where the feed is once this event is taken: what to resume after. */
  id: string;
  /** The record as it is now, as GET answers it. */
  data: unknown;
}

export interface FeedRead {
  events: FeedEvent[];
  /** Where the next read starts (past every change read, and past the horizon when nothing more is there). */
  position: FeedCursor;
  /** A full page was read: more may be there at once. */
  more: boolean;
}

const later = (a: FeedCursor, b: FeedCursor) => BigInt(a.xid) > BigInt(b.xid) || (a.xid === b.xid && BigInt(a.seq) > BigInt(b.seq));

/**
 * readFeed reads one page of the organization's changes after `cursor`: at most FEED_PAGE entries, and
 * no more once its records reach `maxBytes`. Each carries its record as it is now: one deleted
 * meanwhile is skipped. While nothing passes the filter, the position still moves
 * on with the horizon, so that the next read never reads it all again.
 */
export async function readFeed(
  db: Db,
  principal: Principal,
  cursor: FeedCursor,
  filter: FeedFilter,
  { maxBytes = FEED_PAGE_MAX_BYTES } = {},
): Promise<FeedRead> {
  const { entries, horizon } = await readFeedPage(db, principal.organizationId, cursor, filter, FEED_PAGE);
  const events: FeedEvent[] = [];
  let bytes = 0;
  let last: FeedEntry | undefined;
  for (const entry of lastOfEachRecord(entries)) {
    // Full: the next page starts after the last entry taken. An earlier change of a record left out
    // here was superseded by a later one, which that page reads.
    if (last && bytes >= maxBytes) return { events, position: last, more: true };
    const record = await recordOf(db, principal.organizationId, entry);
    if (record) {
      events.push({ event: FEED_EVENT_NAMES[entry.kind], id: formatFeedCursor(entry), data: record });
      bytes += JSON.stringify(record).length;
    }
    last = entry;
  }
  const more = entries.length === FEED_PAGE;
  if (more) return { events, position: entries[entries.length - 1], more };
  // Every entry below the horizon after the cursor was in this page: the next read starts there.
  const atHorizon = { xid: horizon, seq: '0' };
  return { events, position: later(atHorizon, cursor) ? atHorizon : cursor, more };
}

export interface FeedTarget {
  event(event: FeedEvent): Promise<void>;
  /** Tells the client where the stream is (an SSE `id` with no event), so that it resumes from there. */
  position(id: string): Promise<void>;
  /** Tells the client the stream's time is up: it reconnects at once. */
  reconnect(): Promise<void>;
  closed(): boolean;
}

/**
 * followFeed sends the organization's changes after `start` as they are stored, reading every `pollMs`,
 * until the client goes away or `maxMs` have passed. A quiet stream tells its client where it is
 * every STREAM_KEEPALIVE_MS, and as it ends, with a `reconnect` event.
 */
export async function followFeed(
  db: Db,
  principal: Principal,
  start: FeedCursor,
  filter: FeedFilter,
  target: FeedTarget,
  { pollMs = 250, maxMs = STREAM_MAX_MS } = {},
) {
  const endsAt = Date.now() + maxMs;
  let cursor = start;
  let told = formatFeedCursor(start);
  let lastSent = Date.now();
  await target.position(told);
  while (!target.closed() && Date.now() < endsAt) {
    const page = await readFeed(db, principal, cursor, filter);
    for (const event of page.events) {
      if (target.closed()) return;
      await target.event(event);
      told = event.id;
      lastSent = Date.now();
    }
    cursor = page.position;
    if (page.more) continue;
    if (Date.now() - lastSent >= STREAM_KEEPALIVE_MS) {
      told = formatFeedCursor(cursor);
      await target.position(told);
      lastSent = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  if (target.closed()) return;
  if (formatFeedCursor(cursor) !== told) await target.position(formatFeedCursor(cursor));
  await target.reconnect();
}

/**
 * FeedPruner deletes the feed's entries older than FEED_RETENTION_HOURS, every ten minutes, a batch
 * at a time, in every process that serves or works: however many do, each entry goes once.
 */
export class FeedPruner {
  private readonly every: Every;

  constructor(
    private readonly db: Db,
    log: Logger,
  ) {
    this.every = new Every(PRUNE_EVERY_MS, () => this.pruneOnce(), log, 'pruning the live feed failed');
  }

  start(): void {
    this.every.start();
  }

  stop(): Promise<void> {
    return this.every.stop();
  }

  /** pruneOnce deletes every entry older than the retention; answers how many. */
  async pruneOnce(): Promise<number> {
    const before = new Date(Date.now() - FEED_RETENTION_HOURS * 3_600_000);
    let deleted = 0;
    for (;;) {
      const n = await deleteFeedEntriesBefore(this.db, before, PRUNE_BATCH);
      deleted += n;
      if (n < PRUNE_BATCH) return deleted;
    }
  }
}
