import pino, { type Logger } from 'pino';

export type { Logger };

/** Lines wait for this many bytes, or for FLUSH_MS, before they are written. */
const BUFFER_BYTES = 4096;
const FLUSH_MS = 1000;

/**
 * The process's logger, JSON lines on stdout. Lines are buffered and written in batches: one write
 * call per access-log line was the largest single cost of a request after the response itself. A
 * quiet process still shows each line within FLUSH_MS, and pino writes out what is pending when the
 * process exits (a SIGKILL loses at most that last second).
 */
export function createLogger(level: string, mixin?: () => Record<string, string>): Logger {
  const destination = pino.destination({ sync: false, minLength: BUFFER_BYTES });
  setInterval(() => destination.flush(), FLUSH_MS).unref();
  // mixin: the trace and span ids, only when tracing is on (platform/tracing.ts).
  return pino({ level, base: { service: 'plinth' }, ...(mixin ? { mixin } : {}) }, destination);
}
