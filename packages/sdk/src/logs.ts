import { toApiError } from './errors.js';
import { parseSse } from './sse.js';
import { Outage, type ReconnectOptions } from './reconnect.js';
import type { LogLine, LogsPage } from './types.js';

export interface FollowOptions extends ReconnectOptions {
  /** Start after this seq (default 0: from the first line). */
  after?: number;
}

type Send = (path: string, init?: RequestInit) => Promise<Response>;

/**
 * followLogs yields a step execution's lines as Server-Sent Events deliver them and returns the
 * step's final status from the stream's `end` event. A stream whose time is up (its `reconnect` event)
 * is opened again at once, after the last seq received. A connection that breaks before `end` (a
 * restart of the API, a proxy's idle cut) is opened again with Last-Event-ID set to the last seq
 * seen, so no line is lost or repeated; while the API does not answer it is tried again for up to
 * `reconnectForMs` (5 minutes), calling `onReconnect` before each attempt.
 */
/** How long a log stream must have stayed open to count as a connection that worked. */
const STABLE_STREAM_MS = 30_000;

export async function* followLogs(send: Send, executionId: string, options: FollowOptions = {}): AsyncGenerator<LogLine, string | undefined> {
  let lastSeq = options.after ?? 0;
  const outage = new Outage(options);
  for (;;) {
    let openedAt: number | undefined;
    let timeUp = false;
    let delivered = false;
    try {
      const response = await send(`/pipeline-step-executions/${encodeURIComponent(executionId)}/logs?follow=true`, {
        headers: { accept: 'text/event-stream', 'last-event-id': String(lastSeq) },
        signal: options.signal,
      });
      if (!response.ok) throw toApiError(response, await response.json().catch(() => undefined));
      if (!response.body) throw new Error('the log stream has no body');
      outage.connected();
      openedAt = Date.now();
      for await (const event of parseSse(response.body)) {
        if (event.event === 'line') {
          const line = JSON.parse(event.data) as LogLine;
          if (line.seq <= lastSeq) continue;
          lastSeq = line.seq;
          delivered = true;
          outage.progressed();
          yield line;
        } else if (event.event === 'end') {
          outage.progressed();
          return (JSON.parse(event.data) as { status?: string }).status;
        } else if (event.event === 'reconnect') {
          // The stream's time is up (the server checks the credential again at each): open it again at
          // once. One that asks at once, having brought nothing, is retried as a failure, with back-off.
          if (!delivered && Date.now() - openedAt < STABLE_STREAM_MS) throw new Error('the log stream asked to reconnect at once');
          outage.progressed();
          timeUp = true;
          break;
        } else if (event.event === 'error') {
          throw new Error(`the log stream failed: ${event.data}`);
        }
      }
      if (timeUp) continue;
      throw new Error('the log stream ended before the step did');
    } catch (error) {
      // A stream that stayed open a while was a working connection, lines or not (a quiet step): its
      // end starts a new outage, with a window of its own.
      if (openedAt !== undefined && Date.now() - openedAt >= STABLE_STREAM_MS) outage.progressed();
      await outage.failed(error, { executionId, afterSeq: lastSeq });
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
