// @plinth/sdk: a typed client of the Plinth API. The types are generated from /openapi.json
// (generated/openapi.ts); calls go through openapi-fetch; the rest is the little it cannot do alone.

export { createPlinth, Plinth, unwrap, type PlinthOptions } from './client.js';
export { PlinthApiError, PlinthTimeoutError, toApiError } from './errors.js';
export type { components, paths } from './generated/openapi.js';
export { followLogs, readLogLines, type FollowOptions } from './logs.js';
export { pages, type ListItem, type ListParams, type ListPath, type Page } from './paginate.js';
export { retryAfterMs, retryingFetch, shouldRetry, type RetryOptions } from './retry.js';
export { DEFAULT_RECONNECT_FOR_MS, isTransient, Outage, type ReconnectEvent, type ReconnectOptions } from './reconnect.js';
export { followRunLogs, OUTCOME_RUN_STATUSES, type FollowRunOptions, type RunLogLine, type RunReader } from './run-logs.js';
export { waitForRun, waitingStep, type DecideOptions, type StartRunOptions, type WaitOptions } from './runs.js';
export { parseSse, type SseEvent } from './sse.js';
export * from './types.js';

/** The version of this package. */
export const SDK_VERSION = '0.0.0';
