import { sql, type RawBuilder } from 'kysely';
import type { Db, Executor } from '../platform/db/db.ts';
import { withRetries, type RetryOptions } from '../platform/db/retry.ts';
import { storedForm } from './log-bytes.ts';

export type LogStream = 'stdout' | 'stderr' | 'system';

/** The per-step log limits (docs/engine.md#worker-knobs). */
export interface LogLimits {
  /** Output bytes stored per step execution (newlines included); the rest is discarded behind a marker line. */
  maxBytes: number;
  /** Records stored per step execution, so that millions of tiny lines cannot fill the disk either. */
  maxLines: number;
}

export const DEFAULT_LOG_LIMITS: LogLimits = { maxBytes: 50 * 1024 * 1024, maxLines: 500_000 };

/** loadLogLimits reads the limits' knobs through the engine config's integer reader. */
export function loadLogLimits(read: (name: string, fallback: number) => number): LogLimits {
  return {
    maxBytes: read('PLINTH_STEP_LOG_MAX_BYTES', DEFAULT_LOG_LIMITS.maxBytes),
    maxLines: read('PLINTH_STEP_LOG_MAX_LINES', DEFAULT_LOG_LIMITS.maxLines),
  };
}

/** A flush starts as soon as this much is pending, without waiting for the timer. */
const FLUSH_BYTES = 256 * 1024;
/** What a record costs beside its bytes (object, array slots), so tiny lines are accounted too. */
const RECORD_OVERHEAD = 64;

interface PendingRecord {
  seq: number;
  stream: LogStream;
  line: string;
  bytes: Buffer | null;
  partial: boolean;
  size: number;
}

export interface LogStats {
  /** Output bytes the process wrote (newlines included), stored or not. */
  bytesSeen: number;
  bytesStored: number;
  linesStored: number;
  truncated: boolean;
  /** Records whose flush failed for good (after retries): they are not in the database. */
  linesLost: number;
}

export interface LogSinkOptions {
  flushMs?: number;
  limits?: LogLimits;
  /** How a failed flush is retried (withRetries' defaults: transient faults for up to 60 s). */
  retry?: RetryOptions;
}

/**
 * LogSink numbers a step's output records and writes them in batches (one insert per flush, via unnest),
 * so a chatty process costs a few statements a second, and a reader sees lines within `flushMs`.
 * A record counts as acknowledged once its flush committed; `close` flushes the rest before the step's
 * completion is written, so a finished step never misses a line. `queuedBytes` (pending plus in flight)
 * and `belowQueued` let the reader of the process pause it until the database has caught up.
 */
export class LogSink {
  private pending: PendingRecord[] = [];
  private pendingSize = 0;
  private inFlightSize = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private waiters: { limit: number; resolve: () => void }[] = [];
  private readonly flushMs: number;
  private readonly limits: LogLimits;
  private readonly retry: RetryOptions;
  readonly stats: LogStats = { bytesSeen: 0, bytesStored: 0, linesStored: 0, truncated: false, linesLost: 0 };
  /** The last failed write: the runner reports it on the step rather than pretending the lines landed. */
  lastError: Error | undefined;

  constructor(
    private readonly db: Db,
    private readonly executionId: string,
    private nextSeq: number,
    options: LogSinkOptions | number = {},
  ) {
    const o = typeof options === 'number' ? { flushMs: options } : options;
    this.flushMs = o.flushMs ?? 100;
    this.limits = o.limits ?? DEFAULT_LOG_LIMITS;
    this.retry = o.retry ?? {};
  }

  /** Bytes accepted but not yet committed (pending and in flight). */
  get queuedBytes(): number {
    return this.pendingSize + this.inFlightSize;
  }

  /** A line given as a string: the engine's own (`system`, never counted against the limits), or output. */
  write(stream: LogStream, line: string): void {
    const bytes = Buffer.from(line, 'utf8');
    if (stream === 'system') this.push(stream, bytes, false);
    else this.writeOutput(stream, bytes, false);
  }

  /**
   * writeOutput stores one record of the process's output, up to the limits: the record that crosses
   * the byte limit is stored up to it, then one marker line says the output was truncated; everything
   * after is only counted. Returns false once the log is truncated (the caller may stop splitting).
   */
  writeOutput(stream: 'stdout' | 'stderr', bytes: Buffer, partial: boolean): boolean {
    const size = bytes.length + (partial ? 0 : 1);
    this.stats.bytesSeen += size;
    if (this.stats.truncated) return false;
    const room = this.limits.maxBytes - this.stats.bytesStored;
    if (this.stats.linesStored >= this.limits.maxLines) return this.truncate(`${this.limits.maxLines} lines (PLINTH_STEP_LOG_MAX_LINES)`);
    if (size > room) {
      if (room > 0) this.store(stream, bytes.subarray(0, room), true, room);
      return this.truncate(`${this.limits.maxBytes} bytes (PLINTH_STEP_LOG_MAX_BYTES)`);
    }
    this.store(stream, bytes, partial, size);
    return true;
  }

  /** Output the process wrote after the log was truncated: counted, never stored. */
  discard(byteCount: number): void {
    this.stats.bytesSeen += byteCount;
  }

  private truncate(limit: string): false {
    this.stats.truncated = true;
    this.push(
      'system',
      Buffer.from(`[plinth] output truncated at ${limit}: the rest of this step's output is discarded (statusDetail.logBytesSeen has its size)`),
      false,
    );
    return false;
  }

  private store(stream: LogStream, bytes: Buffer, partial: boolean, size: number) {
    this.stats.bytesStored += size;
    this.stats.linesStored++;
    this.push(stream, bytes, partial);
  }

  private push(stream: LogStream, bytes: Buffer, partial: boolean) {
    const { line, bytes: exact } = storedForm(bytes);
    const size = bytes.length + RECORD_OVERHEAD;
    this.pending.push({ seq: this.nextSeq++, stream, line, bytes: exact, partial, size });
    this.pendingSize += size;
    if (this.pendingSize >= FLUSH_BYTES) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** Resolves once no more than `limit` bytes are queued (at once when that is already so). */
  belowQueued(limit: number): Promise<void> {
    if (this.queuedBytes <= limit) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ limit, resolve }));
  }

  flush(): Promise<void> {
    this.cancelTimer();
    const batch = this.pending;
    const size = this.pendingSize;
    this.pending = [];
    this.pendingSize = 0;
    if (batch.length === 0) return this.flushing;
    this.inFlightSize += size;
    // Chained, so batches land in order even when a flush is slower than the interval. A retryable
    // fault is retried (the insert is idempotent: `on conflict do nothing`); a batch that still fails is
    // counted as lost, never dropped silently, and the later batches are still tried.
    this.flushing = this.flushing
      .then(() => withRetries(() => insertRecords(this.db, this.executionId, batch), this.retry))
      .catch((error: Error) => {
        this.lastError = error;
        this.stats.linesLost += batch.length;
      })
      .finally(() => {
        this.inFlightSize -= size;
        this.wakeWaiters();
      });
    return this.flushing;
  }

  private wakeWaiters() {
    const ready = this.waiters.filter((w) => this.queuedBytes <= w.limit);
    this.waiters = this.waiters.filter((w) => this.queuedBytes > w.limit);
    for (const w of ready) w.resolve();
  }

  async close(): Promise<void> {
    await this.flush();
  }

  /**
   * settled waits for the flushes already started, and starts none: what is still pending stays for
   * takeTail (the step's last lines, committed with its outcome). `linesLost` is then final for all
   * but those.
   */
  async settled(): Promise<void> {
    this.cancelTimer();
    await this.flushing;
  }

  /**
   * takeTail hands over what is pending, to be written in the transaction that commits the step's
   * outcome (one commit less per step, and the last lines land exactly with it).
   * Should that transaction fail for good, `storeTail` stores them as a flush would, or counts them lost.
   */
  takeTail(): LogTail | undefined {
    this.cancelTimer();
    const batch = this.pending;
    if (batch.length === 0) return undefined;
    this.pending = [];
    this.pendingSize = 0;
    return { insert: recordsInsert(this.executionId, batch), batch };
  }

  /** storeTail writes a tail whose transaction failed, as a flush: retried, else counted lost. */
  storeTail(tail: LogTail): Promise<void> {
    this.pending.unshift(...tail.batch);
    this.pendingSize += tail.batch.reduce((n, r) => n + r.size, 0);
    return this.flush();
  }

  private cancelTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** The last records of a step, written by the transaction that commits its outcome (locked-run.ts). */
export interface LogTail {
  readonly insert: RawBuilder<unknown>;
  readonly batch: readonly PendingRecord[];
}

async function insertRecords(db: Executor, executionId: string, batch: readonly PendingRecord[]) {
  await recordsInsert(executionId, batch).execute(db);
}

/** Idempotent: a retried write of the same records writes nothing again. */
function recordsInsert(executionId: string, batch: readonly PendingRecord[]): RawBuilder<unknown> {
  return sql`
    insert into step_logs (step_execution_id, seq, stream, line, bytes, partial)
    select ${executionId}, s, st, l, b, p
      from unnest(${batch.map((r) => r.seq)}::int[], ${batch.map((r) => r.stream)}::text[], ${batch.map((r) => r.line)}::text[],
                  ${batch.map((r) => r.bytes)}::bytea[], ${batch.map((r) => r.partial)}::boolean[]) as t(s, st, l, b, p)
    on conflict do nothing`;
}
