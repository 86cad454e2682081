import type { Db } from './db/db.ts';
import { Every } from './every.ts';
import type { Logger } from './logger.ts';

/**
 * A kind of work that falls due in the database (a domain's DNS record to look for, a task definition to
 * read): `claim` takes one due item for this process alone (pushing its due time on, so another worker
 * takes it only should this one die), `run` does it.
 */
export interface DueCheck<T = any> {
  name: string;
  claim(db: Db): Promise<T | undefined>;
  run(item: T): Promise<void>;
}

/** How many times a due item is tried before it is given up (until something makes it due again). */
export const MAX_DUE_ATTEMPTS = 8;
const HOUR_MS = 3600 * 1000;

/**
 * retryAt says when to try an item again after its `attempts`th try (counting from 1): a minute
 * later, then doubling, at most hourly; null once it has been tried MAX_DUE_ATTEMPTS times.
 */
export function retryAt(attempts: number): Date | null {
  return attempts >= MAX_DUE_ATTEMPTS ? null : new Date(Date.now() + Math.min(HOUR_MS, 60_000 * 2 ** Math.max(0, attempts - 1)));
}

/** Items of each kind one worker takes per tick: a backlog is worked off over several ticks. */
const PER_TICK = 20;

/**
 * DuePoller takes the due work of its checks in worker processes, every `intervalSeconds`: each due
 * item is claimed by one worker, however many poll.
 */
export class DuePoller {
  private readonly every: Every;

  constructor(
    private readonly db: Db,
    private readonly checks: DueCheck[],
    intervalSeconds: number,
    private readonly log: Logger,
  ) {
    this.every = new Every(intervalSeconds * 1000, () => this.runDueOnce(), log, 'due checks failed');
  }

  start(): void {
    this.every.start();
  }

  stop(): Promise<void> {
    return this.every.stop();
  }

  /** runDueOnce takes up to PER_TICK due items of each check; returns how many it took. */
  async runDueOnce(): Promise<number> {
    let done = 0;
    for (const check of this.checks) {
      for (let i = 0; i < PER_TICK; i++) {
        const item = await check.claim(this.db);
        if (item === undefined) break;
        try {
          await check.run(item);
        } catch (error) {
          // One failing item does not stop the others; it is due again when its claim runs out.
          this.log.warn({ check: check.name, err: { message: (error as Error).message } }, 'a due check failed');
        }
        done++;
      }
    }
    return done;
  }
}
