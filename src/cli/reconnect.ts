// Riding out an API restart or a network blip while a command waits on a run: the request is tried
// again, with a visible line, for up to five minutes of trying.

import { PlinthApiError } from '@plinth/sdk';

export const RECONNECT_FOR_MS = 5 * 60_000;
const MAX_PAUSE_MS = 5_000;

/** Whether a failure is the connection's (nobody answered, or a proxy said the API is away), not the API's answer. */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof PlinthApiError) return error.status === 502 || error.status === 503 || error.status === 504;
  if (!(error instanceof Error)) return false;
  return (
    error.message === 'fetch failed' || ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET'].includes((error as { code?: string }).code ?? '')
  );
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (error instanceof PlinthApiError) return `${error.status}`;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/**
 * Reconnector retries what a waiting command asks of the API while the connection is down. It says
 * once that it is reconnecting and once that it is back, and gives up (rethrowing the failure) after
 * RECONNECT_FOR_MS without an answer.
 */
export class Reconnector {
  private downSince?: number;

  constructor(
    private readonly host: string,
    private readonly say: (line: string) => void,
    private readonly forMs = RECONNECT_FOR_MS,
  ) {}

  async call<T>(request: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const answer = await request();
        if (this.downSince !== undefined) this.say(`plinth: reconnected to ${this.host}`);
        this.downSince = undefined;
        return answer;
      } catch (error) {
        if (!isConnectionFailure(error)) throw error;
        this.lost(error);
        if (Date.now() - this.downSince! > this.forMs) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(MAX_PAUSE_MS, 250 * 2 ** attempt)));
      }
    }
  }

  /** lost records a broken connection (also one the log stream saw); the first of an outage is said aloud. */
  lost(error: unknown) {
    if (this.downSince !== undefined) return;
    this.downSince = Date.now();
    this.say(`plinth: lost the connection to ${this.host} (${causeOf(error)}); reconnecting for up to ${Math.round(this.forMs / 60_000)} minutes…`);
  }
}
