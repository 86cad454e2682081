import { toApiError } from './errors.js';
import { parseSse } from './sse.js';
import type { LogLine, LogsPage } from './types.js';

export interface FollowOptions {
  /** Start after this seq (default 0: from the first line). */
  after?: number;
  signal?: AbortSignal;
  /** Reconnections in a row without a new line before giving up (default 5). */
  maxReconnects?: number;
  /** Called when the stream broke and is being resumed. */
  onReconnect?: (afterSeq: number, error: unknown) => void;
}

type Send = (path: string, init?: RequestInit) => Promise<Response>;

/**
 * followLogs yields a step execution's lines as Server-Sent Events deliver them and returns the
 * step's final status from the stream's `end` event. A connection that breaks before `end` (a
 * restart of the API, a proxy's idle cut) is opened again with Last-Event-ID set to the last seq
 * seen, so no line is lost or repeated.
 */
export async function* followLogs(send: Send, executionId: string, options: FollowOptions = {}): AsyncGenerator<LogLine, string | undefined> {
  let lastSeq = options.after ?? 0;
  let failures = 0;
  const maxReconnects = options.maxReconnects ?? 5;
  for (;;) {
    let progressed = false;
    try {
      const response = await send(`/pipeline-step-executions/${encodeURIComponent(executionId)}/logs?follow=true`, {
        headers: { accept: 'text/event-stream', 'last-event-id': String(lastSeq) },
        signal: options.signal,
      });
      if (!response.ok) throw toApiError(response, await response.json().catch(() => undefined));
      if (!response.body) throw new Error('the log stream has no body');
      for await (const event of parseSse(response.body)) {
        if (event.event === 'line') {
          const line = JSON.parse(event.data) as LogLine;
          if (line.seq <= lastSeq) continue;
          lastSeq = line.seq;
          progressed = true;
          yield line;
        } else if (event.event === 'end') {
          return (JSON.parse(event.data) as { status?: string }).status;
        } else if (event.event === 'error') {
          throw new Error(`the log stream failed: ${event.data}`);
        }
      }
      throw new Error('the log stream ended before the step did');
    } catch (error) {
      // Answers of the API (404, 403, 401...) will not change by asking again; neither does an abort.
      if (options.signal?.aborted || (error as { status?: number }).status !== undefined) throw error;
      failures = progressed ? 1 : failures + 1;
      if (failures > maxReconnects) throw error;
      options.onReconnect?.(lastSeq, error);
      await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 200 * 2 ** failures)));
    }
  }
}

/** readLogLines pages through the stored lines by `after` = the last page's `meta.lastSeq`, until a page brings nothing new. */
export async function* readLogLines(readPage: (after: number) => Promise<LogsPage>, after = 0): AsyncGenerator<LogLine> {
  for (let seq = after; ; ) {
    const page = await readPage(seq);
    yield* page.data;
    if (page.data.length === 0 || page.meta.lastSeq <= seq) return;
    seq = page.meta.lastSeq;
  }
}
