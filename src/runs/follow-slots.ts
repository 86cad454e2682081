import { AppError } from '../platform/errors.ts';

/** 429: the caller already follows as many logs as one caller may at once. */
export class TooManyFollowersError extends AppError {
  constructor(message: string, limit: number) {
    super(429, 'Api:StepLogs:TOO_MANY_FOLLOWERS', message, { metadata: { limit } });
  }
}

/**
 * FollowSlots counts the log follow streams open in this API process. Each costs a socket, up to one page
 * of records and a poll of the database every 200 ms, so their number is bounded: per caller (a user or
 * a service account, whatever key it uses), so that one caller cannot take them all, and per process.
 */
export class FollowSlots {
  private total = 0;
  private readonly byCaller = new Map<string, number>();

  constructor(
    readonly maxPerCaller = 32,
    readonly maxTotal = 512,
  ) {}

  /** Takes a slot for `caller`, or throws a 429; the returned function gives it back (once). */
  acquire(caller: string): () => void {
    const held = this.byCaller.get(caller) ?? 0;
    if (held >= this.maxPerCaller) {
      throw new TooManyFollowersError(`At most ${this.maxPerCaller} log streams can be followed at once by one caller`, this.maxPerCaller);
    }
    if (this.total >= this.maxTotal)
      throw new TooManyFollowersError(`This server follows ${this.maxTotal} log streams already; try again later`, this.maxTotal);
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
