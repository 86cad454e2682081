/**
 * Retrying database work through transient faults: a deadlock or serialization failure that the next
 * try wins, a dropped connection, a server restarting or failing over. graphile-worker's `withRetries`
 * does the same for its own writes; engine writes (claim, heartbeat, log flush, completion, reaper) use
 * this so that a fault of a few seconds never loses an outcome nor kills a process.
 */

/** SQLSTATE classes and codes worth another try: the work itself was not wrong. */
const RETRYABLE_SQLSTATES = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57P01', // admin_shutdown (the server is stopping)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up or in recovery)
  '53300', // too_many_connections
  '53400', // configuration_limit_exceeded
]);

/** Node-level errors of a connection that never opened or went away. */
const RETRYABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

const CONNECTION_MESSAGES = [
  /connection terminated/i,
  /connection timeout/i,
  /client has encountered a connection error/i,
  /terminating connection/i,
  /cannot use a pool after calling end/i,
];

/** isRetryableDbError is true for a fault that says nothing about the work: trying again may succeed. */
export function isRetryableDbError(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (RETRYABLE_SQLSTATES.has(code) || RETRYABLE_NODE_CODES.has(code)) return true;
    // Class 08: connection exceptions.
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  const message = (error as { message?: unknown }).message;
  if (typeof message === 'string' && CONNECTION_MESSAGES.some((re) => re.test(message))) return true;
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error && isRetryableDbError(cause);
}

export interface RetryOptions {
  /** Give up after this long in all (the last error is thrown). */
  maxElapsedMs?: number;
  /** First delay; each next delay doubles, up to maxDelayMs, with jitter. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Stops retrying (throws the last error) once aborted. */
  signal?: AbortSignal;
  /** Called before each wait, for a log line. */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /** Which errors to retry; defaults to isRetryableDbError. */
  isRetryable?: (error: unknown) => boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * withRetries runs `fn` until it succeeds, retrying retryable errors with bounded exponential backoff
 * and jitter. A non-retryable error, or one after `maxElapsedMs` (default 60 s), is thrown as is.
 * `fn` must be safe to run again: a transaction that failed was rolled back, so it is.
 */
export async function withRetries<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const { maxElapsedMs = 60_000, initialDelayMs = 50, maxDelayMs = 2_000, signal, onRetry, isRetryable = isRetryableDbError } = options;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      const base = Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1));
      const delay = Math.round(base / 2 + Math.random() * (base / 2));
      if (!isRetryable(error) || signal?.aborted || Date.now() - started + delay > maxElapsedMs) throw error;
      onRetry?.(error, attempt, delay);
      await sleep(delay);
    }
  }
}
