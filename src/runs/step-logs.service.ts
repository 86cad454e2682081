import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../platform/pagination.ts';
import { BadRequestError } from '../platform/errors.ts';
import { isTerminalStep, type StepStatus } from '../engine/run-state.ts';
import { findExecutionStatus } from './runs.repo.ts';
import { assertPermission } from '../platform/auth/roles.ts';
import { showsPlan } from './runs.map.ts';
import { getExecutionRow } from './runs.service.ts';
import type { LogLine } from './runs.schema.ts';
import { findLastLogLines, findLastSeq, findLogLines, type LogRow } from './step-logs.repo.ts';
import { STREAM_KEEPALIVE_MS, STREAM_MAX_MS } from '../platform/http/event-stream.ts';

/** A search examines at most this many records per page. */
export const SEARCH_SCAN_LINES = 100_000;

/** The tail is the end of what is stored: nothing after it is left to read but what is still to be written. */
async function tailPage(db: Db, id: string, limit: number, after: number) {
  const rows = await findLastLogLines(db, id, limit, PAGE_MAX_BYTES);
  return { rows, more: false, lastSeq: rows.length ? rows[rows.length - 1].seq : after };
}

/** A JSON page stops once its records hold this many bytes (at least one record is always returned). */
export const PAGE_MAX_BYTES = 1024 * 1024;
/**
 * A follow stream reads this many records (or bytes) per query, and the next page only once the client
 * has taken the last one: a client that stops reading holds at most one page in this process.
 */
export const FOLLOW_PAGE_ROWS = 200;
export const FOLLOW_PAGE_MAX_BYTES = 256 * 1024;

function logRowToLine(row: LogRow): LogLine {
  return {
    seq: row.seq,
    stream: row.stream,
    line: row.line,
    ...(row.bytes ? { bytes: row.bytes.toString('base64') } : {}),
    ...(row.partial ? { partial: true } : {}),
    createdAt: row.created_at,
  };
}

const rowBytes = (rows: LogRow[]) => rows.reduce((sum, r) => sum + Buffer.byteLength(r.line) + (r.bytes?.length ?? 0), 0);

function pageLimit(limit: number | null | undefined): number {
  if (limit !== undefined && limit !== null && limit < 1) throw new BadRequestError('limit must be at least 1', ['limit: must be >= 1']);
  return Math.min(limit ?? DEFAULT_PAGE_SIZE * 10, MAX_PAGE_SIZE * 10);
}

/**
 * readPage reads up to `limit` records after `after` within `maxBytes`, and tells whether more may
 * follow: one record past the limit is asked for, and a page cut by bytes may have more.
 */
async function readPage(db: Db, id: string, after: number, limit: number, maxBytes: number) {
  const rows = await findLogLines(db, id, after, limit + 1, maxBytes);
  const more = rows.length > limit || rowBytes(rows) >= maxBytes;
  if (rows.length > limit) rows.length = limit;
  return { rows, more, lastSeq: rows.length ? rows[rows.length - 1].seq : after };
}

/**
 * searchPage reads the lines holding `contains` among at most SEARCH_SCAN_LINES records after `after`:
 * a rare text costs one bounded scan per page, never the whole log. `lastSeq` is the last record
 * examined, so the next page goes on from there even when this one found nothing.
 */
async function searchPage(db: Db, id: string, after: number, limit: number, contains: string) {
  const until = after + SEARCH_SCAN_LINES;
  const rows = await findLogLines(db, id, after, limit + 1, PAGE_MAX_BYTES, { contains, until });
  if (rows.length > limit || rowBytes(rows) >= PAGE_MAX_BYTES) {
    if (rows.length > limit) rows.length = limit;
    return { rows, more: true, lastSeq: rows[rows.length - 1].seq };
  }
  const stored = (await findLastSeq(db, id)) ?? after;
  return { rows, more: stored > until, lastSeq: Math.max(after, Math.min(until, stored)) };
}

export interface LogsRead {
  after: number;
  limit?: number | null;
  /** The last lines stored so far, instead of those after `after`. */
  tail?: number;
  /** Only lines holding this text, ignoring case. */
  contains?: string;
}

/** The execution whose log is read: 403 for a plan's log to a caller who may not read plans (state:read). */
async function getLoggedExecution(db: Db, principal: Principal, id: string) {
  const row = await getExecutionRow(db, principal, id);
  if (showsPlan(row.step_type)) assertPermission(principal.role, 'state:read');
  return row;
}

/**
 * readLogs returns the step's lines after `after`, oldest first. `complete` is true once the step has
 * ended and nothing is left to read: the status is read before the lines, and a worker stores every
 * line before it records the end, so a terminal status means the lines read after it are the last.
 */
export async function readLogs(db: Db, principal: Principal, id: string, { after, limit, tail, contains }: LogsRead) {
  await getLoggedExecution(db, principal, id);
  if (tail !== undefined && contains !== undefined) throw new BadRequestError('tail and contains do not combine', ['contains: not with tail']);
  const applied = pageLimit(tail ?? limit);
  const status = (await findExecutionStatus(db, id))!;
  const { rows, more, lastSeq } =
    tail !== undefined
      ? await tailPage(db, id, applied, after)
      : contains !== undefined
        ? await searchPage(db, id, after, applied, contains)
        : await readPage(db, id, after, applied, PAGE_MAX_BYTES);
  return {
    data: rows.map(logRowToLine),
    meta: { limit: applied, lastSeq, complete: isTerminalStep(status) && !more, stepStatus: status as StepStatus },
  };
}

export interface LogStreamTarget {
  /** Sends one line; resolves once the client can take more (or has gone). */
  line(line: LogLine): Promise<void>;
  /** Sends nothing but proof of life. */
  keepAlive(): Promise<void>;
  end(status: string): void;
  /** Tells the client the stream's time is up: it reconnects at once, after the last line it took. */
  reconnect(): void;
  closed(): boolean;
}

/**
 * followLogs streams the step's lines as they are stored, polling every `pollMs`, and ends once the
 * step has ended and its last line was sent, when the client goes away, or after `maxMs` (a step may
 * wait for its approval for days: its reader's credential is checked again as it reconnects). It reads
 * the next page only after the target took every line of the last one, so a stalled client stalls its
 * own stream only.
 */
export async function followLogs(
  db: Db,
  principal: Principal,
  id: string,
  after: number,
  target: LogStreamTarget,
  { pollMs = 200, maxMs = STREAM_MAX_MS } = {},
) {
  await getLoggedExecution(db, principal, id);
  const endsAt = Date.now() + maxMs;
  let seq = after;
  let lastSent = Date.now();
  while (!target.closed()) {
    if (Date.now() >= endsAt) return target.reconnect();
    const status = (await findExecutionStatus(db, id)) ?? 'CANCELLED';
    const { rows, more } = await readPage(db, id, seq, FOLLOW_PAGE_ROWS, FOLLOW_PAGE_MAX_BYTES);
    for (const row of rows) {
      if (target.closed()) return;
      await target.line(logRowToLine(row));
      seq = row.seq;
      lastSent = Date.now();
    }
    if (more) continue;
    if (isTerminalStep(status)) return target.end(status);
    if (Date.now() - lastSent >= STREAM_KEEPALIVE_MS) {
      await target.keepAlive();
      lastSent = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
