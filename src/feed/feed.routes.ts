import { Type } from '@sinclair/typebox';
import type { App } from '../platform/http/app.ts';
import { EventStreams, STREAM_MAX_MS, sseEvent, sseReconnect, wantsEventStream } from '../platform/http/event-stream.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import { ConcurrencySlots, slotHolderOf } from '../platform/http/concurrency-slots.ts';
import { Id } from '../platform/schema.ts';
import { FEED_RETENTION_HOURS, followFeed, formatFeedCursor, openFeed, parseFeedCursor, readFeed } from './feed.service.ts';

const FeedQuery = Type.Object(
  {
    moduleInstanceId: Type.Optional({ ...Id, description: 'Only the changes of this module instance' }),
    environmentId: Type.Optional({ ...Id, description: 'Only the changes of module instances in this environment' }),
    after: Type.Optional(
      Type.String({
        maxLength: 41,
        description: 'Read the changes after this id (of an event, or `meta.lastEventId`), as Last-Event-ID does; without either: from now',
      }),
    ),
  },
  { additionalProperties: false },
);

const FeedPage = Type.Object({
  data: Type.Array(
    Type.Object({
      event: Type.String({ description: 'deployment, deployment-resource or domain-event' }),
      id: Type.String({ description: 'Where the feed is once this event is taken' }),
      data: Type.Object({}, { additionalProperties: true, description: 'The record as GET answers it' }),
    }),
  ),
  meta: Type.Object({
    lastEventId: Type.String({ description: 'Pass as `after` to read on from here' }),
    more: Type.Boolean({ description: 'A full page was read: more may be there at once' }),
  }),
});

/** The live feed of deployments, deployment resources and domain events (docs/deployments.md#live-feed). */
export async function feedRoutes(app: App) {
  const streams = new EventStreams(app, 'events');
  const slots = new ConcurrencySlots({ what: 'event streams', code: 'Api:EventStream:TOO_MANY_STREAMS' });

  app.get(
    '/events/stream',
    {
      schema: {
        tags: ['deployments'],
        operationId: 'streamEvents',
        summary: "Follow the organization's deployments, deployment resources and domain events (Server-Sent Events), or read them a page at a time",
        description:
          'With `Accept: text/event-stream`: an SSE stream of `deployment`, `deployment-resource` and `domain-event` events, each with the ' +
          'record as `GET` answers it (as it is when sent: a record changed several times at once is sent once). Otherwise a JSON page of ' +
          'the same events after `after`, and `meta.lastEventId` to read on from. Without Last-Event-ID or `after`, it starts from now; a ' +
          `reconnecting client sends the last id it took (of an event, or an \`id\` line alone, which moves the stream's place while nothing ` +
          `passes its filter) and gets everything after it, for ${FEED_RETENTION_HOURS} hours. A stream ends after ${STREAM_MAX_MS / 60_000} minutes ` +
          'with a `reconnect` event, and its client reconnects at once with Last-Event-ID: the credential is checked again then. A quiet ' +
          'stream sends its place every 15 s; one whose client stops taking data for 60 s is disconnected. One caller holds at most 32 ' +
          'streams at once per API process, one organization 128 (429 beyond).',
        querystring: FeedQuery,
        response: {
          ...errorResponses({
            400: 'Last-Event-ID or `after` is not an id this feed gave',
            404: 'The module instance or environment of the filter is not found',
            429: 'Too many streams open at once by this caller, its organization or this API process',
          }),
          200: FeedPage,
        },
      },
    },
    async (request, reply) => {
      const { after, ...filter } = request.query;
      const streaming = wantsEventStream(request.headers.accept, undefined);
      // A reconnecting stream's Last-Event-ID is newer than the `after` of the URL it reconnects to.
      const from = streaming ? request.headers['last-event-id'] || after : (after ?? request.headers['last-event-id']);
      const start = await openFeed(app.db, request.principal, parseFeedCursor(from), filter);
      if (!streaming) {
        const page = await readFeed(app.db, request.principal, start, filter);
        return { data: page.events, meta: { lastEventId: formatFeedCursor(page.position), more: page.more } };
      }
      const release = slots.acquire(slotHolderOf(request.principal));
      await streams.serve(reply, request.id, release, (stream) =>
        followFeed(app.db, request.principal, start, filter, {
          event: (e) => stream.send(sseEvent(e.event, e.id, e.data)),
          position: (id) => stream.send(`id: ${id}\n\n`),
          reconnect: () => stream.send(sseReconnect()),
          closed: stream.closed,
        }),
      );
      return reply;
    },
  );
}
