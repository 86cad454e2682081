import { sql } from 'kysely';
import type { Db } from '../platform/db/db.ts';

export type LogStream = 'stdout' | 'stderr' | 'system';

/**
 * LogSink numbers a step's output lines and writes them in batches (one insert per flush, via unnest),
 * so a chatty process costs a few statements a second, and a reader sees lines within `flushMs`.
 * A line counts as acknowledged once its flush committed; `close` flushes the rest before the step's
 * completion is written, so a finished step never misses a line.
 */
export class LogSink {
  private pending: { seq: number; stream: LogStream; line: string }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  /** The last failed write: the runner reports it on the step rather than pretending the lines landed. */
  lastError: Error | undefined;

  constructor(
    private readonly db: Db,
    private readonly executionId: string,
    private nextSeq: number,
    private readonly flushMs = 100,
  ) {}

  write(stream: LogStream, line: string): void {
    this.pending.push({ seq: this.nextSeq++, stream, line: line.length > 16_384 ? `${line.slice(0, 16_384)}…` : line });
    this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return this.flushing;
    // Chained, so batches land in order even when a flush is slower than the interval.
    this.flushing = this.flushing.then(() => insertLines(this.db, this.executionId, batch)).catch((error: Error) => {
      this.lastError = error;
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    await this.flush();
  }
}

async function insertLines(db: Db, executionId: string, batch: { seq: number; stream: LogStream; line: string }[]) {
  await sql`
    insert into step_logs (step_execution_id, seq, stream, line)
    select ${executionId}, s, st, l
      from unnest(${batch.map((b) => b.seq)}::int[], ${batch.map((b) => b.stream)}::text[], ${batch.map((b) => b.line)}::text[]) as t(s, st, l)
    on conflict do nothing`.execute(db);
}
