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

/** Whom a stream counts against: its caller, and the organization it reads. */
export interface StreamHolder {
  /** streamCallerOf the principal. */
  caller: string;
  organizationId: string;
}

/** streamHolderOf: the caller and the organization a principal's stream counts against. */
export function streamHolderOf(principal: Pick<Principal, 'userId' | 'organizationId' | 'organizationOnly'>): StreamHolder {
  return { caller: streamCallerOf(principal), organizationId: principal.organizationId };
}

/** 429: the caller, its organization or this process already holds as many streams of this kind as it may at once. */
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
  maxPerOrganization?: number;
  maxTotal?: number;
}

/**
 * StreamSlots counts the streams of one kind open in this API process. Each costs a socket, up to one
 * page of records and a poll of the database several times a second, so their number is bounded: per
 * caller (a user or a service account, whatever key it uses), so that one caller cannot take them all;
 * per organization, so that one tenant's many members or service accounts cannot either; and per
 * process.
 */
export class StreamSlots {
  private total = 0;
  private readonly byCaller = new Map<string, number>();
  private readonly byOrganization = new Map<string, number>();
  readonly maxPerCaller: number;
  readonly maxPerOrganization: number;
  readonly maxTotal: number;

  constructor(private readonly options: StreamSlotsOptions) {
    this.maxPerCaller = options.maxPerCaller ?? 32;
    // Four callers' worth: one member's own key and a key bound to the organization (two callers) take half.
    this.maxPerOrganization = options.maxPerOrganization ?? 128;
    this.maxTotal = options.maxTotal ?? 512;
  }

  /** Takes a slot for `holder`, or throws a 429; the returned function gives it back (once). */
  acquire(holder: StreamHolder): () => void {
    const { what, code } = this.options;
    if ((this.byCaller.get(holder.caller) ?? 0) >= this.maxPerCaller) {
      throw new TooManyStreamsError(code, `At most ${this.maxPerCaller} ${what} at once by one caller`, this.maxPerCaller);
    }
    if ((this.byOrganization.get(holder.organizationId) ?? 0) >= this.maxPerOrganization) {
      throw new TooManyStreamsError(code, `At most ${this.maxPerOrganization} ${what} at once in one organization`, this.maxPerOrganization);
    }
    if (this.total >= this.maxTotal) {
      throw new TooManyStreamsError(code, `This server holds ${this.maxTotal} ${what} already; try again later`, this.maxTotal);
    }
    increment(this.byCaller, holder.caller, 1);
    increment(this.byOrganization, holder.organizationId, 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      increment(this.byCaller, holder.caller, -1);
      increment(this.byOrganization, holder.organizationId, -1);
    };
  }
}

/** Adds `by` to the count of `key`, forgetting a count that falls to zero. */
function increment(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
