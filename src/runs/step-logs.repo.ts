import { sql, type Selectable } from 'kysely';
import type { StepLogsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';

export type LogRow = Pick<Selectable<StepLogsTable>, 'seq' | 'stream' | 'line' | 'bytes' | 'partial' | 'created_at'>;

/**
 * findLastLogLines returns the last `limit` records (within `maxBytes`, counted from the end), oldest
 * first: the tail of a log, read backwards on the same index, so a long log costs no more than a short one.
 */
export async function findLastLogLines(db: Executor, executionId: string, limit: number, maxBytes: number): Promise<LogRow[]> {
  const { rows } = await sql<LogRow>`
    select seq, stream, line, bytes, partial, created_at
      from (select seq, stream, line, bytes, partial, created_at,
                   sum(octet_length(line) + coalesce(octet_length(bytes), 0)) over (order by seq desc) as upto,
                   octet_length(line) + coalesce(octet_length(bytes), 0) as size
              from step_logs
             where step_execution_id = ${executionId}
             order by seq desc
             limit ${limit}) as page
     where upto - size < ${maxBytes}
     order by seq`.execute(db);
  return rows;
}

/**
 * findLogLines returns up to `limit` records after `after`, oldest first, and stops early once the
 * records returned hold `maxBytes` (always at least one): a page's memory is bounded by bytes as well as
 * by rows, since a record can be 16 KiB and its escaped form four times that. The running sum is
 * computed on the index scan, which the limit stops, so nothing past the page is read.
 */
export async function findLogLines(
  db: Executor,
  executionId: string,
  after: number,
  limit: number,
  maxBytes: number,
  search?: { contains: string; until: number },
): Promise<LogRow[]> {
  const { rows } = await sql<LogRow>`
    select seq, stream, line, bytes, partial, created_at
      from (select seq, stream, line, bytes, partial, created_at,
                   sum(octet_length(line) + coalesce(octet_length(bytes), 0)) over (order by seq) as upto,
                   octet_length(line) + coalesce(octet_length(bytes), 0) as size
              from step_logs
             where step_execution_id = ${executionId} and seq > ${after}
               ${search === undefined ? sql`` : sql`and seq <= ${search.until} and strpos(lower(line), lower(${search.contains})) > 0`}
             order by seq
             limit ${limit}) as page
     where upto - size < ${maxBytes}
     order by seq`.execute(db);
  return rows;
}

/** The seq of the last record stored so far, or undefined for none. */
export async function findLastSeq(db: Executor, executionId: string): Promise<number | undefined> {
  const row = await db.selectFrom('step_logs').select('seq').where('step_execution_id', '=', executionId).orderBy('seq', 'desc').limit(1).executeTakeFirst();
  return row?.seq;
}
