import type { Logger } from './logger.ts';

/**
 * Every runs `work` every `intervalMs` in the background, one run at a time (a run still going when
 * the next is due is not doubled), logging a failure as `failure` and going on. `stop` waits for the
 * run in progress, so a process stops with no work half done.
 */
export class Every {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly work: () => Promise<unknown>,
    private readonly log: Logger,
    private readonly failure: string,
  ) {}

  /** Starts the runs; a second start, or an interval of 0 or less, does nothing. */
  start(): void {
    if (this.intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.work()
        .then(() => undefined)
        .catch((error) => this.log.warn({ err: error }, this.failure))
        .finally(() => (this.running = undefined));
    }, this.intervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
