import type { Principal } from '../auth/principal.ts';
import { AppError, type ErrorCode } from '../errors.ts';

/**
 * Whom a principal's streams count against: the user (or service account), whatever key it uses; a
 * key bound to one organization (a Git sign-in's) on its own, so that what one organization's Git
 * server signs in cannot use up the user's streams everywhere else.
 */
export function streamCallerOf(principal: Pick<Principal, 'userId' | 'organizationId' | 'organizationOnly'>): string {
  return principal.organizationOnly ? `${principal.userId}@${principal.organizationId}` : principal.userId;
}

/** 429: the caller already holds as many streams of this kind as one caller may at once. */
export class TooManyStreamsError extends AppError {
  constructor(code: ErrorCode, message: string, limit: number) {
    super(429, code, message, { metadata: { limit } });
  }
}

export interface StreamSlotsOptions {
  /** What the streams are, as the 429's message names them: "log streams followed". */
  what: string;
  /** The 429's error code. */
  code: ErrorCode;
  maxPerCaller?: number;
  maxTotal?: number;
}

/**
 * StreamSlots counts the streams of one kind open in this API process. Each costs a socket, up to one
 * page of records and a poll of the database several times a second, so their number is bounded: per
 * caller (a user or a service account, whatever key it uses), so that one caller cannot take them all,
 * and per process.
 */
export class StreamSlots {
  private total = 0;
  private readonly byCaller = new Map<string, number>();
  readonly maxPerCaller: number;
  readonly maxTotal: number;

  constructor(private readonly options: StreamSlotsOptions) {
    this.maxPerCaller = options.maxPerCaller ?? 32;
    this.maxTotal = options.maxTotal ?? 512;
  }

  /** Takes a slot for `caller`, or throws a 429; the returned function gives it back (once). */
  acquire(caller: string): () => void {
    const held = this.byCaller.get(caller) ?? 0;
    if (held >= this.maxPerCaller) {
      throw new TooManyStreamsError(this.options.code, `At most ${this.maxPerCaller} ${this.options.what} at once by one caller`, this.maxPerCaller);
    }
    if (this.total >= this.maxTotal) {
      throw new TooManyStreamsError(this.options.code, `This server holds ${this.maxTotal} ${this.options.what} already; try again later`, this.maxTotal);
    }
    this.byCaller.set(caller, held + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.byCaller.get(caller) ?? 1) - 1;
      if (left > 0) this.byCaller.set(caller, left);
      else this.byCaller.delete(caller);
    };
  }
}
