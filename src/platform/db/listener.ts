import pg from 'pg';

/** The longest wait between two attempts to listen again: a database back from an outage is heard within it. */
const MAX_BACKOFF_MS = 5_000;
const FIRST_BACKOFF_MS = 100;

export interface ChannelListenerOptions {
  connectionString: string;
  /** A channel name as PostgreSQL reads an identifier unquoted. */
  channel: string;
  /** What this listener is for, as its log lines name it ("the step-stop listener"). */
  name: string;
  log?: { warn(obj: object, msg: string): void };
  onNotification(payload: string | undefined): void;
  /** The LISTEN is in place, at start and after each reconnect: what was sent while it was down was missed. */
  onListening?(): void;
  /** The LISTEN is gone (the connection was lost, or an attempt to make it failed); another attempt follows. */
  onDown?(): void;
}

/**
 * ChannelListener keeps one LISTEN on a channel, on a connection of its own, through database restarts
 * and network cuts: a lost connection is reopened with backoff (100 ms doubling to 5 s), one attempt at
 * a time, so an outage of any length ends with exactly one listening connection. Notifications sent
 * while it was down are missed; `onListening` tells the owner to make up for them.
 */
export class ChannelListener {
  private client: pg.Client | undefined;
  /** The connection of an attempt in flight, which close() ends too. */
  private connecting: pg.Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;

  constructor(private readonly options: ChannelListenerOptions) {
    if (!/^[a-z_][a-z0-9_]*$/.test(options.channel)) throw new Error(`"${options.channel}" is not a channel name`);
  }

  get listening(): boolean {
    return this.client !== undefined;
  }

  /** Resolves once the first LISTEN is in place, or once it failed: it then retries in the background. */
  start(): Promise<void> {
    return this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const clients = [this.client, this.connecting];
    this.client = undefined;
    await Promise.all(clients.map((client) => client?.end().catch(() => {})));
  }

  private async connect(): Promise<void> {
    // keepAlive: a connection cut without a FIN (a dropped NAT entry) is noticed, and listened again.
    const client = new pg.Client({ connectionString: this.options.connectionString, keepAlive: true });
    this.connecting = client;
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    client.on('notification', (n) => n.channel === this.options.channel && this.options.onNotification(n.payload));
    try {
      await client.connect();
      await client.query(`listen ${this.options.channel}`);
    } catch (error) {
      this.connecting = undefined;
      client.end().catch(() => {});
      if (this.closed) return;
      this.options.log?.warn({ err: error }, `${this.options.name} cannot listen yet; retrying`);
      this.options.onDown?.();
      this.retry();
      return;
    }
    this.connecting = undefined;
    if (this.closed) return void (await client.end().catch(() => {}));
    this.client = client;
    this.failures = 0;
    this.options.onListening?.();
  }

  /** Only the loss of the listening connection starts a retry: a failed attempt schedules its own. */
  private lost(client: pg.Client, error?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    if (this.closed) return;
    this.options.log?.warn({ err: error }, `lost ${this.options.name}; listening again`);
    this.options.onDown?.();
    this.retry();
  }

  private retry(): void {
    if (this.closed || this.retryTimer) return;
    const delay = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** this.failures++);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.closed) void this.connect();
    }, delay);
    this.retryTimer.unref();
  }
}
