import { Type } from '@sinclair/typebox';
import type { App } from '../platform/http/app.ts';
import { EventStreams, sseEvent } from '../platform/http/event-stream.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import { StreamSlots } from '../platform/http/stream-slots.ts';
import { Id } from '../platform/schema.ts';
import { FEED_RETENTION_HOURS, FEED_STREAM_MAX_MS, followFeed, openFeed, parseFeedCursor } from './feed.service.ts';

const FeedQuery = Type.Object(
  {
    moduleInstanceId: Type.Optional({ ...Id, description: 'Only the changes of this module instance' }),
    environmentId: Type.Optional({ ...Id, description: 'Only the changes of module instances in this environment' }),
  },
  { additionalProperties: false },
);

/** The live feed of deployments, deployment resources and domain events (docs/deployments.md#live-feed). */
export async function feedRoutes(app: App) {
  const streams = new EventStreams(app, 'events');
  const slots = new StreamSlots({ what: 'event streams', code: 'Api:EventStream:TOO_MANY_STREAMS' });

  app.get(
    '/events/stream',
    {
      schema: {
        tags: ['deployments'],
        operationId: 'streamEvents',
        summary: "Follow the organization's deployments, deployment resources and domain events as Server-Sent Events",
        description:
          'An SSE stream of `deployment`, `deployment-resource` and `domain-event` events, each with the record as `GET` answers it ' +
          '(as it is when sent: a record changed several times at once is sent once). Without Last-Event-ID it starts from now; a ' +
          `reconnecting client sends the last id it took (of an event, or an \`id\` line alone, which moves the stream's place while nothing ` +
          `passes its filter) and gets everything after it, for ${FEED_RETENTION_HOURS} hours. A stream ends after ${FEED_STREAM_MAX_MS / 60_000} minutes, ` +
          'and its client reconnects with Last-Event-ID: the credential is checked again then. A quiet stream sends its place every 15 s; ' +
          'one whose client stops taking data for 60 s is disconnected. One caller holds at most 32 streams at once per API process (429 beyond).',
        querystring: FeedQuery,
        response: {
          ...errorResponses({ 400: 'Last-Event-ID is not an id this stream sent', 429: 'Too many streams open at once by this caller or this API process' }),
          200: Type.String({ description: 'text/event-stream' }),
        },
      },
    },
    async (request, reply) => {
      const start = await openFeed(app.db, request.principal, parseFeedCursor(request.headers['last-event-id']), request.query);
      const release = slots.acquire(request.principal.userId);
      await streams.serve(reply, request.id, release, (stream) =>
        followFeed(app.db, request.principal, start, request.query, {
          event: (name, id, record) => stream.send(sseEvent(name, id, record)),
          position: (id) => stream.send(`id: ${id}\n\n`),
          closed: stream.closed,
        }),
      );
      return reply;
    },
  );
}
