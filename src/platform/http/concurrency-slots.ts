import type { Principal } from '../auth/principal.ts';
import { TooManyRequestsError, type ErrorCode } from '../errors.ts';

/**
 * Whom a principal's slots count against: the user (or service account), whatever key it uses; a
 * key bound to one organization (a Git sign-in's) on its own, so that what one organization's Git
 * server signs in cannot use up the user's slots everywhere else.
 */
export function slotCallerOf(principal: Pick<Principal, 'userId' | 'organizationId' | 'organizationOnly'>): string {
  return principal.organizationOnly ? `${principal.userId}@${principal.organizationId}` : principal.userId;
}

/** Whom a slot counts against: its caller, and the organization it acts in. */
export interface SlotHolder {
  /** slotCallerOf the principal. */
  caller: string;
  organizationId: string;
}

/** slotHolderOf: the caller and the organization a principal's slots count against. */
export function slotHolderOf(principal: Pick<Principal, 'userId' | 'organizationId' | 'organizationOnly'>): SlotHolder {
  return { caller: slotCallerOf(principal), organizationId: principal.organizationId };
}

/** 429 with Retry-After: the caller, its organization or this process already holds as many slots of this kind as it may at once. */
export class TooManyAtOnceError extends TooManyRequestsError {
  constructor(code: ErrorCode, message: string, limit: number, retryAfterSeconds: number) {
    super(code, message, retryAfterSeconds, { limit });
  }
}

export interface ConcurrencySlotsOptions {
  /** What the slots are for, as the 429's message names them: "log streams followed". */
  what: string;
  /** The 429's error code. */
  code: ErrorCode;
  /** The 429's Retry-After: about how long one holder keeps its slot (default 5). */
  retryAfterSeconds?: number;
  maxPerCaller?: number;
  maxPerOrganization?: number;
  maxTotal?: number;
}

/**
 * ConcurrencySlots counts the holders of one kind of costly work under way in this API process: a
 * stream (a socket, a page of records, a poll of the database several times a second), or a call to a
 * tenant's Git server. Their number is bounded per caller (a user or a service account, whatever key it
 * uses), so that one caller cannot take them all; per organization, so that one tenant's many members or
 * service accounts cannot either; and per process.
 */
export class ConcurrencySlots {
  private total = 0;
  private readonly byCaller = new Map<string, number>();
  private readonly byOrganization = new Map<string, number>();
  readonly maxPerCaller: number;
  readonly maxPerOrganization: number;
  readonly maxTotal: number;

  constructor(private readonly options: ConcurrencySlotsOptions) {
    this.maxPerCaller = options.maxPerCaller ?? 32;
    // Four callers' worth: one member's own key and a key bound to the organization (two callers) take half.
    this.maxPerOrganization = options.maxPerOrganization ?? 128;
    this.maxTotal = options.maxTotal ?? 512;
  }

  /** Takes a slot for `holder`, or throws a 429; the returned function gives it back (once). */
  acquire(holder: SlotHolder): () => void {
    const { what, code, retryAfterSeconds = 5 } = this.options;
    const refuse = (message: string, limit: number) => new TooManyAtOnceError(code, message, limit, retryAfterSeconds);
    if ((this.byCaller.get(holder.caller) ?? 0) >= this.maxPerCaller) {
      throw refuse(`At most ${this.maxPerCaller} ${what} at once by one caller`, this.maxPerCaller);
    }
    if ((this.byOrganization.get(holder.organizationId) ?? 0) >= this.maxPerOrganization) {
      throw refuse(`At most ${this.maxPerOrganization} ${what} at once in one organization`, this.maxPerOrganization);
    }
    if (this.total >= this.maxTotal) {
      throw refuse(`This server holds ${this.maxTotal} ${what} already; try again later`, this.maxTotal);
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

  /** Runs `work` holding a slot for `holder` (or throws the 429 without running it), and gives the slot back when it ends. */
  async hold<T>(holder: SlotHolder, work: () => Promise<T>): Promise<T> {
    const release = this.acquire(holder);
    try {
      return await work();
    } finally {
      release();
    }
  }
}

/** Adds `by` to the count of `key`, forgetting a count that falls to zero. */
function increment(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
