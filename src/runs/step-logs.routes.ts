import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { BadRequestError } from '../platform/errors.ts';
import { Example, IdParams } from '../platform/schema.ts';
import { EventStreams, STREAM_MAX_MS, sseEvent, sseReconnect, wantsEventStream } from '../platform/http/event-stream.ts';
import { ConcurrencySlots, slotHolderOf } from '../platform/http/concurrency-slots.ts';
import { LogsPage, LogsQuery, MAX_LOG_SEQ } from './runs.schema.ts';
import { followLogs, readLogs } from './step-logs.service.ts';
import { logsPageExample } from './runs.examples.ts';

/** The seq to resume after, from Last-Event-ID: a non-negative 32-bit integer, or a 400. */
export function parseLastEventId(header: string | string[] | undefined): number | undefined {
  if (header === undefined || header === '') return undefined;
  const value = Array.isArray(header) ? header.join(',') : header;
  const seq = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(seq <= MAX_LOG_SEQ)) {
    throw new BadRequestError('Last-Event-ID must be the seq of a line: an integer from 0 to 2147483647', [`last-event-id: not a valid seq`]);
  }
  return seq;
}

export async function stepLogRoutes(app: App) {
  const streams = new EventStreams(app, 'step-logs');
  const slots = new ConcurrencySlots({ what: 'log streams followed', code: 'Api:StepLogs:TOO_MANY_FOLLOWERS' });

  app.get(
    '/pipeline-step-executions/:id/logs',
    {
      schema: {
        tags: ['pipeline-step-executions'],
        operationId: 'getStepExecutionLogs',
        summary: 'Read the lines a step execution wrote, or follow them as Server-Sent Events while it runs',
        description:
          'JSON: lines after `after` (seq), oldest first, at most `limit` and about 1 MiB per page. With `follow=true` or ' +
          '`Accept: text/event-stream`: an SSE stream of `line` events (id = seq, data = the line as JSON) that ends with an `end` ' +
          'event once the step has ended; the server sends the next lines only as fast as the client reads them, and disconnects a ' +
          `client that reads nothing for 60 s. A stream ends after ${STREAM_MAX_MS / 60_000} minutes with a \`reconnect\` event: the client reconnects at ` +
          'once and its credential is checked again. One caller follows at most 32 streams at once per API process, one organization 128 (429 ' +
          'beyond). A reconnecting client sends Last-Event-ID (a seq; anything else is a 400) to resume; it wins over `after`. ' +
          'Output is stored byte for byte: see `line`, `bytes` and `partial`; a step whose output exceeded the log limit ends with a ' +
          '`system` line saying so, and its statusDetail has `logTruncated: true`.',
        params: IdParams,
        querystring: LogsQuery,
        response: {
          ...errorResponses({
            429: 'Too many log streams followed at once by this caller, its organization or this API process, or too many failed authentications from this address',
          }),
          200: Example(LogsPage, logsPageExample),
        },
      },
    },
    async (request, reply) => {
      const streaming = wantsEventStream(request.headers.accept, request.query.follow);
      // A reconnecting stream's Last-Event-ID is newer than the `after` of the URL it reconnects to.
      const lastEventId = parseLastEventId(request.headers['last-event-id']);
      const after = (streaming ? (lastEventId ?? request.query.after) : (request.query.after ?? lastEventId)) ?? 0;
      if (!streaming) {
        const { limit, tail, contains } = request.query;
        return readLogs(app.db, request.principal, request.params.id, { after, limit, tail, contains });
      }
      if (request.query.tail !== undefined)
        throw new BadRequestError('tail reads what is stored; it does not combine with following', ['tail: not with follow']);
      if (request.query.contains !== undefined)
        throw new BadRequestError('contains searches what is stored; it does not combine with following', ['contains: not with follow']);
      // The execution must exist before the stream opens, so a 404 is still an ErrorBody.
      await readLogs(app.db, request.principal, request.params.id, { after, limit: 1 });
      const release = slots.acquire(slotHolderOf(request.principal));
      await streams.serve(reply, request.id, release, (stream) =>
        followLogs(app.db, request.principal, request.params.id, after, {
          line: (line) => stream.send(sseEvent('line', line.seq, line)),
          keepAlive: () => stream.send(': keep-alive\n\n'),
          end: (status) => void stream.send(sseEvent('end', undefined, { status })),
          reconnect: () => void stream.send(sseReconnect()),
          closed: stream.closed,
        }),
      );
      return reply;
    },
  );
}
