import pg from 'pg';
import { withRetries } from '../platform/db/retry.ts';
import type { Logger } from '../platform/logger.ts';

/**
 * StopListener keeps a LISTEN on `plinth_step_stop` (a cancelled step's worker kills its process at
 * once) through database restarts: a lost connection is reopened with backoff. Notifications sent
 * while it was away are missed; the heartbeat notices those within PLINTH_WORKER_HEARTBEAT_MS.
 */
export class StopListener {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  /** A reconnect is scheduled or in flight: never two chains of attempts at once (each would open its own connection). */
  private reconnecting = false;
  private failures = 0;

  constructor(
    private readonly connectionString: string,
    private readonly log: Logger,
    private readonly onStop: (executionId: string) => void,
  ) {}

  /** start connects, waiting out a database that is restarting or failing over (a minute at most). */
  async start(): Promise<void> {
    await withRetries(() => this.connect(), { onRetry: (err) => this.log.warn({ err }, 'the step-stop listener cannot connect yet; retrying') });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    await this.client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    // Only the loss of the established connection starts a reconnect; a failed attempt is its caller's to retry.
    const onLost = (error?: Error) => {
      if (this.client !== client) return;
      this.client = undefined;
      if (this.stopped) return;
      this.log.warn({ err: error }, 'lost the step-stop listener; reconnecting');
      this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (n) => n.payload && this.onStop(n.payload));
    try {
      await client.connect();
      await client.query('listen plinth_step_stop');
    } catch (error) {
      client.end().catch(() => {});
      throw error;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.failures = 0;
  }

  private scheduleReconnect() {
    if (this.reconnecting || this.stopped) return;
    this.reconnecting = true;
    const delay = Math.min(5_000, 100 * 2 ** this.failures++);
    this.retryTimer = setTimeout(() => {
      if (this.stopped) return;
      this.connect().then(
        () => (this.reconnecting = false),
        (err: unknown) => {
          this.reconnecting = false;
          this.log.warn({ err }, 'the step-stop listener cannot reconnect yet; retrying');
          this.scheduleReconnect();
        },
      );
    }, delay);
  }
}
