import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../platform/pagination.ts';
import { BadRequestError } from '../platform/errors.ts';
import { isTerminalStep, type StepStatus } from '../engine/run-state.ts';
import { findExecutionStatus, findLogLines, type LogRow } from './runs.repo.ts';
import { getExecutionRow } from './runs.service.ts';
import type { LogLine } from './runs.schema.ts';

function logRowToLine(row: LogRow): LogLine {
  return { seq: row.seq, stream: row.stream as LogLine['stream'], line: row.line, createdAt: row.created_at };
}

function pageLimit(limit: number | null | undefined): number {
  if (limit !== undefined && limit !== null && limit < 1) throw new BadRequestError('limit must be at least 1', ['limit: must be >= 1']);
  return Math.min(limit ?? DEFAULT_PAGE_SIZE * 10, MAX_PAGE_SIZE * 10);
}

/**
 * readLogs returns the step's lines after `after`, oldest first. `complete` is true once the step has
 * ended and nothing is left to read: the status is read before the lines, and a worker stores every
 * line before it records the end, so a terminal status means the lines read after it are the last.
 */
export async function readLogs(db: Db, principal: Principal, id: string, after: number, limit: number | null | undefined) {
  await getExecutionRow(db, principal, id);
  const applied = pageLimit(limit);
  const status = (await findExecutionStatus(db, id))!;
  const rows = await findLogLines(db, id, after, applied);
  const lastSeq = rows.length ? rows[rows.length - 1].seq : after;
  return {
    data: rows.map(logRowToLine),
    meta: { limit: applied, lastSeq, complete: isTerminalStep(status) && rows.length < applied, stepStatus: status as StepStatus },
  };
}

export interface LogStreamTarget {
  line(line: LogLine): void;
  end(status: string): void;
  closed(): boolean;
}

/**
 * followLogs streams the step's lines as they are stored, polling every `pollMs`, and ends once the
 * step has ended and its last line was sent (or when the client goes away).
 */
export async function followLogs(db: Db, principal: Principal, id: string, after: number, target: LogStreamTarget, pollMs = 200) {
  await getExecutionRow(db, principal, id);
  let seq = after;
  while (!target.closed()) {
    const status = (await findExecutionStatus(db, id)) ?? 'CANCELLED';
    const rows = await findLogLines(db, id, seq, 1000);
    for (const row of rows) target.line(logRowToLine(row));
    if (rows.length) seq = rows[rows.length - 1].seq;
    if (rows.length === 1000) continue;
    if (isTerminalStep(status)) return target.end(status);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
