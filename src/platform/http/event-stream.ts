// Server-Sent Events streams (step logs, the live feed): how a hijacked response is written, paced to
// its reader, and ended on shutdown.

import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { metrics } from '../metrics/metrics.ts';
import type { App } from './app.ts';

/** A stream client that takes nothing for this long is disconnected; it resumes with Last-Event-ID. */
export const STREAM_STALL_MS = 60_000;
/**
 * A stream ends after this long with a `reconnect` event, and its client resumes with Last-Event-ID: the
 * credential is checked again then, so a revoked key or a removed member stops reading within it.
 */
export const STREAM_MAX_MS = 5 * 60_000;
/** The event that ends a stream whose time is up: reconnect at once with Last-Event-ID. */
export const sseReconnect = (): string => sseEvent('reconnect', undefined, { reason: 'The stream reached its time limit: reconnect with Last-Event-ID' });
/** A stream with nothing to send says so this often (an SSE comment), so proxies and dead clients show. */
export const STREAM_KEEPALIVE_MS = 15_000;

/** wantsEventStream: the caller asked for a stream, by `follow=true` or by its Accept header. */
export function wantsEventStream(accept: string | undefined, follow: boolean | undefined): boolean {
  return follow === true || (accept ?? '').includes('text/event-stream');
}

/** One SSE event's text: `data` as JSON on one line. */
export function sseEvent(event: string, id: string | number | undefined, data: unknown): string {
  return `event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}

/** Resolves once the socket can take more ('drain'), or has closed; a client stalled too long is cut off. */
function drained(raw: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    const timer = setTimeout(() => {
      raw.destroy();
      done();
    }, STREAM_STALL_MS);
    raw.on('drain', done);
    raw.on('close', done);
  });
}

export interface EventStream {
  /** Writes `text`, waiting for the socket to drain when its buffer is full. */
  send(text: string): Promise<void>;
  /** The client went away, or the server is shutting down. */
  closed(): boolean;
}

/**
 * EventStreams keeps the SSE streams of one route plugin: on shutdown they end (clients resume with
 * Last-Event-ID) instead of holding the drain open, and one stalled on a client that reads nothing is
 * cut at once, rather than after STREAM_STALL_MS.
 */
export class EventStreams {
  private shuttingDown = false;
  private readonly open = new Set<ServerResponse>();

  constructor(
    app: App,
    private readonly name: string,
  ) {
    app.addHook('preClose', async () => {
      this.shuttingDown = true;
      for (const raw of this.open) if (raw.writableNeedDrain) raw.destroy();
    });
  }

  /**
   * serve takes the response over from Fastify, writes the stream's head, and runs `write` until it
   * returns; `release` runs once the client is gone. Errors after the head become an `error` event.
   */
  async serve(reply: FastifyReply, requestId: string, release: () => void, write: (stream: EventStream) => Promise<void>): Promise<void> {
    const raw = reply.raw;
    reply.hijack();
    this.open.add(raw);
    let closed = raw.destroyed;
    raw.on('close', () => {
      closed = true;
      this.open.delete(raw);
      release();
    });
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': requestId });
    // Node sends the head with the first write: a stream with nothing to send yet would leave its client
    // waiting for the response itself, as if the server did not answer.
    raw.flushHeaders();
    const stream: EventStream = {
      send: async (text) => {
        if (closed || raw.write(text)) return;
        // Shutting down, a stream does not hold the drain open for a slow reader: it resumes later.
        if (this.shuttingDown) raw.destroy();
        else await drained(raw);
      },
      closed: () => closed || this.shuttingDown,
    };
    metrics.sseConnections.inc({ stream: this.name });
    try {
      await write(stream);
    } catch (error) {
      reply.log.error({ err: error }, `the ${this.name} stream failed`);
      if (!closed) raw.write(sseEvent('error', undefined, { code: 'Api:Internal:ERROR', message: `The ${this.name} stream failed`, requestId }));
    } finally {
      metrics.sseConnections.dec({ stream: this.name });
      release();
      raw.end();
    }
  }
}
