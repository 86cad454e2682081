// Riding out an API that stops answering for a while (a restart, a deploy, a network blip): the calls
// of a long follow are tried again, for up to a time window, telling the caller as they do.

import { PlinthApiError } from './errors.js';
import { sleep } from './retry.js';

/** The default window: long enough for a restart or a rolling deploy of the API. */
export const DEFAULT_RECONNECT_FOR_MS = 5 * 60_000;

export interface ReconnectEvent {
  /** Attempts since the API last answered (1 for the first retry). */
  attempt: number;
  /** Why the last attempt failed. */
  error: unknown;
  /** How long the API has not answered, in ms. */
  downForMs: number;
  /** The wait before the next attempt, in ms. */
  delayMs: number;
  /** When following a step's log: its execution and the last seq received (the stream resumes after it). */
  executionId?: string;
  afterSeq?: number;
}

export interface ReconnectOptions {
  /** How long to keep trying while the API does not answer, in ms (default 300,000: 5 minutes). */
  reconnectForMs?: number;
  /** Called before each new attempt after a failure: the moment to show "reconnecting…". */
  onReconnect?: (event: ReconnectEvent) => void;
  /** Called when the API answers again after onReconnect was called: the moment to hide it. */
  onReconnected?: () => void;
  signal?: AbortSignal;
}

/**
 * isTransient tells a failure that asking again may cure (no connection, a cut stream, 429, 502, 503,
 * 504) from an answer that will not change (401, 403, 404, 422...), nor an abort by the caller.
 */
export function isTransient(error: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return false;
  if (error instanceof PlinthApiError) return [408, 429, 502, 503, 504].includes(error.status);
  // A bug or an answer that does not parse will fail the same way next time.
  if (error instanceof SyntaxError || error instanceof ReferenceError || error instanceof RangeError) return false;
  // fetch's own failures of the connection are TypeErrors: "fetch failed", "terminated" (a cut body).
  if (error instanceof TypeError) return /fetch failed|terminated|network|socket/i.test(error.message);
  return true;
}

/**
 * Outage tracks one stretch of failures: `failed` waits before the next attempt (back-off from 250 ms
 * to 5 s, with jitter) or throws once the window is spent. `connected` says the API answers again
 * (onReconnected); only `progressed` ends the stretch, so a stream that opens and breaks again and
 * again without delivering anything still gives up when the window is spent.
 */
export class Outage {
  private since: number | undefined;
  private attempts = 0;
  private notified = false;

  constructor(private readonly options: ReconnectOptions) {}

  async failed(error: unknown, context: Pick<ReconnectEvent, 'executionId' | 'afterSeq'> = {}): Promise<void> {
    if (!isTransient(error, this.options.signal)) throw error;
    const now = Date.now();
    this.since ??= now;
    const downForMs = now - this.since;
    if (downForMs >= (this.options.reconnectForMs ?? DEFAULT_RECONNECT_FOR_MS)) throw error;
    this.attempts++;
    const delayMs = Math.round(Math.min(5000, 250 * 2 ** (this.attempts - 1)) * (0.5 + Math.random() / 2));
    this.notified = true;
    this.options.onReconnect?.({ attempt: this.attempts, error, downForMs, delayMs, ...context });
    await sleep(delayMs, this.options.signal);
  }

  connected(): void {
    if (this.notified) this.options.onReconnected?.();
    this.notified = false;
  }

  progressed(): void {
    this.connected();
    this.since = undefined;
    this.attempts = 0;
  }

  /** call runs `fn` until it succeeds, the failure is not transient, or the window is spent. */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        const value = await fn();
        this.progressed();
        return value;
      } catch (error) {
        await this.failed(error);
      }
    }
  }
}
