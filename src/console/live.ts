// Pages that follow what they show: one Server-Sent Events stream per page, whose events carry the part
// of the page to swap in (htmx's SSE extension), sent again whenever it changes. Each event's id is the
// version of what it sent: a page that reconnects with Last-Event-ID receives nothing it already shows.

import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../platform/http/app.ts';
import { ApiCallError } from './console-api.ts';
import { EventStreams, STREAM_KEEPALIVE_MS } from '../platform/http/event-stream.ts';
import { ConcurrencySlots, slotHolderOf } from '../platform/http/concurrency-slots.ts';
import { PAGE, type PageContext, type Pages, RecordParams } from './pages.tsx';
import { sessionLive } from './sessions.service.ts';

/** How often a live page's stream reads what it shows again. */
const LIVE_POLL_MS = 2000;
/** A live stream ends after this long; the browser reconnects with Last-Event-ID and goes on. */
const LIVE_STREAM_MS = 5 * 60_000;

/** What a live page shows now. */
export interface LiveView {
  /** Changes exactly when what `render` gives would. */
  version: string;
  /** The HTML to send: made only when the version is not the one the page has. */
  render: () => Promise<string>;
  /** Nothing more will change: the stream says `done` and ends. */
  finished: boolean;
}

/** What a record page's stream reads at each look, made once per stream (so it may keep what never changes). */
export type RecordReader = (ctx: PageContext, id: string) => () => Promise<LiveView>;

export interface LivePages {
  /**
   * Registers `GET /orgs/:org/<records>/:id/live`: the stream of one record's page, sending `event`
   * events of what `reader` reads, from the version `v` the page was sent with.
   */
  recordStream(records: string, event: string, reader: RecordReader): void;
  /**
   * Streams `event` events of `read()`'s HTML as it changes, until it is finished, the session ends or
   * the stream's time is up. `shown` is the version the page was sent with: nothing is sent until it changes.
   */
  serve(request: FastifyRequest, reply: FastifyReply, ctx: PageContext, event: string, shown: string | undefined, read: () => Promise<LiveView>): Promise<void>;
}

export function livePages(app: App, pages: Pages): LivePages {
  const streams = new EventStreams(app, 'console page');
  // Each live page costs a few in-process API reads every LIVE_POLL_MS: bounded per user, per organization
  // (however many service accounts it makes) and per process.
  const slots = new ConcurrencySlots({
    what: 'console pages followed live',
    code: 'Api:EventStream:TOO_MANY_STREAMS',
    maxPerCaller: 16,
    maxPerOrganization: 64,
    maxTotal: 256,
  });

  const live: LivePages = {
    recordStream(records, event, reader) {
      app.get(
        `/orgs/:org/${records}/:id/live`,
        { ...PAGE, schema: { hide: true, params: RecordParams, querystring: Type.Object({ v: LiveVersion }) } },
        async (request, reply) => {
          const ctx = await pages.context(request, request.params.org);
          await live.serve(request, reply, ctx, event, request.query.v, reader(ctx, request.params.id));
        },
      );
    },

    async serve(request, reply, ctx, event, shown, read) {
      // A Git sign-in's streams count apart from the user's own, as the API's do (slotHolderOf).
      const { userId, organizationId } = ctx.me;
      const release = slots.acquire(slotHolderOf({ userId, organizationId, organizationOnly: ctx.session.mintedKey }));
      // Read before the stream opens, so that a failure is an error page rather than a failing stream.
      let view: LiveView | undefined;
      try {
        view = await readUnlessGone(read);
      } catch (error) {
        release();
        throw error;
      }
      const lastEventId = request.headers['last-event-id'];
      await streams.serve(reply, request.id, release, async (stream) => {
        let sent = typeof lastEventId === 'string' ? lastEventId : shown;
        let lastWrite = Date.now();
        const deadline = Date.now() + LIVE_STREAM_MS;
        // Signed out (here or everywhere) meanwhile: the stream ends with the session.
        for (let first = true; !stream.closed() && Date.now() < deadline && (await sessionLive(app, ctx.session)); first = false) {
          if (!first) view = await readUnlessGone(read);
          // Gone, or no longer the reader's: `done` closes the page's stream, where an error answer
          // would have the browser reconnect for as long as the page stays open.
          if (!view) return stream.send(sseHtml('done', '', ''));
          if (view.version !== sent) {
            await stream.send(sseHtml(event, view.version, await view.render()));
            sent = view.version;
            lastWrite = Date.now();
          }
          if (view.finished) return stream.send(sseHtml('done', view.version, ''));
          if (Date.now() - lastWrite >= STREAM_KEEPALIVE_MS) {
            await stream.send(': keepalive\n\n');
            lastWrite = Date.now();
          }
          await sleep(LIVE_POLL_MS);
        }
      });
    },
  };
  return live;
}

/** What a live page shows now, or undefined once what it follows is gone or the reader may no longer see it. */
async function readUnlessGone(read: () => Promise<LiveView>): Promise<LiveView | undefined> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof ApiCallError && [401, 403, 404].includes(error.status)) return undefined;
    throw error;
  }
}

/** An SSE event whose data is HTML, one `data:` line per line of it. */
function sseHtml(event: string, id: string, html: string): string {
  // SSE ends a line at CR as well as LF: a CR in a tenant's text must not end the data line early.
  return `event: ${event}\nid: ${id}\n${html
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join('')}\n`;
}

/** The version of what a live page showed when it was sent (its `v` query): its stream sends nothing until that changes. */
export const LiveVersion = Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{0,64}$' }));

/** A short digest of what a live page shows, for its event ids. */
export function versionOf(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}
