/**
 * WarmPool keeps up to `size` things made ahead (namespaced sandboxes waiting for their step), so taking
 * one costs nothing on the step's path. It refills in the background after each take, at most
 * `parallel` at a time: a burst takes what is ready and the rest are made on demand, never a storm of
 * them at once. Each one
 * is handed out once; one found dead when taken is discarded. A failure to make one stops the refill
 * until the next take, so a broken host does not loop.
 */
export class WarmPool<T> {
  private readonly ready: T[] = [];
  private filling: Promise<void> | undefined;
  private inFlight = 0;
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly make: () => Promise<T>,
    private readonly alive: (item: T) => boolean,
    private readonly discard: (item: T) => Promise<void>,
    private readonly onError: (error: unknown) => void,
    private readonly parallel = 2,
  ) {}

  /**
   * A ready item, or undefined when none is (the caller makes its own). Taking one does not refill: the
   * owner calls fill() when making items hurts least (the sandbox: once the step's outcome is committed),
   * since making an item starts a process, and a spawn blocks the event loop until the child has exec'd
   * (over 10 ms at p99 on a loaded 2-core machine). A take that finds the pool empty (a burst) does
   * start a refill, once the caller's own synchronous and promise work is done.
   */
  take(): T | undefined {
    this.closed = false;
    let found: T | undefined;
    while (!found && this.ready.length) {
      const item = this.ready.shift()!;
      if (this.alive(item)) found = item;
      else void this.discard(item).catch(this.onError);
    }
    if (this.ready.length === 0) setImmediate(() => this.fill());
    return found;
  }

  get readyCount(): number {
    return this.ready.length;
  }

  fill(): void {
    if (this.filling || this.closed || this.size === 0) return;
    const loops = Array.from({ length: Math.min(this.parallel, this.size) }, () => this.refill());
    this.filling = Promise.all(loops)
      .then(() => undefined)
      .finally(() => (this.filling = undefined));
  }

  private async refill(): Promise<void> {
    while (!this.closed && this.ready.length + this.inFlight < this.size) {
      let item: T;
      this.inFlight++;
      try {
        item = await this.make();
      } catch (error) {
        this.onError(error);
        return;
      } finally {
        this.inFlight--;
      }
      if (this.closed) await this.discard(item).catch(this.onError);
      else this.ready.push(item);
    }
  }

  /** Discards every ready item and stops refilling (a later take starts again). */
  async close(): Promise<void> {
    this.closed = true;
    await this.filling;
    await Promise.all(this.ready.splice(0).map((item) => this.discard(item).catch(this.onError)));
  }
}
