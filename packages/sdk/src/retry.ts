// Retries of requests the server did not take: 429 always, 5xx for methods that are safe to repeat.

export interface RetryOptions {
  /** Attempts in all, the first included (default 4). */
  attempts?: number;
  /** The first back-off in ms, doubled per attempt, with jitter (default 250). */
  baseDelayMs?: number;
  /** No single wait is longer, Retry-After included (default 30,000). */
  maxDelayMs?: number;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/**
 * shouldRetry says whether an answer may be asked again. A 429 and a 503 mean the request was not
 * processed, so any method may repeat; other 5xx may have done the work, so only a method whose
 * repetition changes nothing more (GET, PUT, DELETE) repeats, never a POST that could create twice.
 */
export function shouldRetry(method: string, status: number): boolean {
  if (status === 429 || status === 503) return true;
  return status >= 500 && IDEMPOTENT.has(method.toUpperCase());
}

/** retryAfterMs reads Retry-After (delta-seconds or an HTTP date) as a wait in ms, or undefined. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** sleep waits `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * retryingFetch wraps a fetch so that retryable answers and network failures of idempotent requests
 * are tried again, waiting what Retry-After asks (capped) or an exponential back-off with jitter.
 */
export function retryingFetch(inner: typeof fetch, options: RetryOptions = {}): (request: Request) => Promise<Response> {
  const attempts = Math.max(1, options.attempts ?? 4);
  const base = options.baseDelayMs ?? 250;
  const max = options.maxDelayMs ?? 30_000;
  return async (request: Request) => {
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= attempts;
      // The body of a Request can be read once: every attempt but the last sends a copy.
      const sent = last ? request : request.clone();
      const backoff = Math.min(max, base * 2 ** (attempt - 1) * (0.5 + Math.random()));
      let response: Response;
      try {
        response = await inner(sent);
      } catch (error) {
        if (last || request.signal?.aborted || !IDEMPOTENT.has(request.method)) throw error;
        await sleep(backoff, request.signal);
        continue;
      }
      if (last || !shouldRetry(request.method, response.status)) return response;
      const wait = Math.min(max, retryAfterMs(response.headers.get('retry-after')) ?? backoff);
      await response.body?.cancel();
      await sleep(wait, request.signal);
    }
  };
}
