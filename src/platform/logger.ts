import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * The process's logger, JSON lines on stdout. Writes are asynchronous: lines logged while a write is
 * under way go out together in the next one, so under load the access log costs a few write calls per
 * batch rather than one per request. Pino flushes what is pending when the process exits.
 */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'plinth' } }, pino.destination({ sync: false }));
}
