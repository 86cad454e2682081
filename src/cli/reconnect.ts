// Riding out an API restart or a network blip while a command waits on a run: the SDK tries again for up
// to five minutes; the CLI says once that it is reconnecting and once that it is back.

import { DEFAULT_RECONNECT_FOR_MS, Outage, PlinthApiError, type ReconnectOptions } from '@plinth/sdk';
import type { Session } from './session.ts';

function causeOf(error: unknown): string {
  if (error instanceof PlinthApiError) return String(error.status);
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** reconnectOptions makes the SDK's retries of an outage visible: one line when it starts, one when it ends. */
export function reconnectOptions(s: Session, signal?: AbortSignal): ReconnectOptions {
  let down = false;
  return {
    signal,
    onReconnect: (event) => {
      if (down) return;
      down = true;
      const minutes = Math.round(DEFAULT_RECONNECT_FOR_MS / 60_000);
      s.out.info(`plinth: lost the connection to ${s.settings.host} (${causeOf(event.error)}); reconnecting for up to ${minutes} minutes…`);
    },
    onReconnected: () => {
      if (!down) return;
      down = false;
      s.out.info(`plinth: reconnected to ${s.settings.host}`);
    },
  };
}

/** outage is an SDK Outage that reports through reconnectOptions: `outage(s).call(fn)` rides out an outage around `fn`. */
export function outage(s: Session): Outage {
  return new Outage(reconnectOptions(s));
}
