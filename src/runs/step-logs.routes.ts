import { errorResponses } from '../platform/http/openapi.ts';
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../platform/auth/principal.ts';
import type { App } from '../platform/http/app.ts';
import { BadRequestError } from '../platform/errors.ts';
import { Example, IdParams } from '../platform/schema.ts';
import { FollowSlots } from './follow-slots.ts';
import { metrics } from '../platform/metrics/metrics.ts';
import { LogsPage, LogsQuery, MAX_LOG_SEQ } from './runs.schema.ts';
import { followLogs, readLogs } from './step-logs.service.ts';
import { logsPageExample } from './runs.examples.ts';

interface StreamContext {
  principal: Principal;
  executionId: string;
  requestId: string;
  log: FastifyBaseLogger;
}

/** A follow client that takes nothing for this long is disconnected; it resumes with Last-Event-ID. */
export const FOLLOW_STALL_MS = 60_000;

function wantsStream(accept: string | undefined, follow: boolean | undefined): boolean {
  return follow === true || (accept ?? '').includes('text/event-stream');
}

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
    }, FOLLOW_STALL_MS);
    raw.on('drain', done);
    raw.on('close', done);
  });
}

/**
 * streamLogs writes the step's lines to the hijacked response as Server-Sent Events, each write waiting
 * for the socket to drain when its buffer is full, and ends the response.
 */
async function streamLogs(app: App, request: StreamContext, raw: ServerResponse, after: number, stopping: () => boolean) {
  let closed = raw.destroyed;
  raw.on('close', () => (closed = true));
  raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': request.requestId });
  const send = async (text: string) => {
    if (!closed && !raw.write(text)) await drained(raw);
  };
  metrics.sseConnections.inc({ stream: 'step-logs' });
  try {
    await followLogs(app.db, request.principal, request.executionId, after, {
      line: (line) => send(`event: line\nid: ${line.seq}\ndata: ${JSON.stringify(line)}\n\n`),
      keepAlive: () => send(': keep-alive\n\n'),
      end: (status) => void send(`event: end\ndata: ${JSON.stringify({ status })}\n\n`),
      closed: () => closed || stopping(),
    });
  } catch (error) {
    request.log.error({ err: error }, 'failed to stream logs');
    if (!closed)
      raw.write(`event: error\ndata: ${JSON.stringify({ code: 'Api:Internal:ERROR', message: 'The log stream failed', requestId: request.requestId })}\n\n`);
  }
  metrics.sseConnections.dec({ stream: 'step-logs' });
  raw.end();
}

export async function stepLogRoutes(app: App) {
  // Follow streams can last as long as a step: on shutdown they end (clients resume with Last-Event-ID)
  // instead of holding the drain open.
  // A stream stalled on a client that reads nothing is cut at once, rather than after FOLLOW_STALL_MS.
  let shuttingDown = false;
  const streams = new Set<ServerResponse>();
  const slots = new FollowSlots();
  app.addHook('preClose', async () => {
    shuttingDown = true;
    for (const raw of streams) if (raw.writableNeedDrain) raw.destroy();
  });

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
          'client that reads nothing for 60 s. One caller follows at most 32 streams at once per API process (429 beyond). A reconnecting client sends Last-Event-ID (a seq; anything else is a 400) to resume. ' +
          'Output is stored byte for byte: see `line`, `bytes` and `partial`; a step whose output exceeded the log limit ends with a ' +
          '`system` line saying so, and its statusDetail has `logTruncated: true`.',
        params: IdParams,
        querystring: LogsQuery,
        response: {
          ...errorResponses({
            429: 'Too many log streams followed at once by this caller or this API process, or too many failed authentications from this address',
          }),
          200: Example(LogsPage, logsPageExample),
        },
      },
    },
    async (request, reply) => {
      const after = request.query.after ?? parseLastEventId(request.headers['last-event-id']) ?? 0;
      if (!wantsStream(request.headers.accept, request.query.follow)) {
        return readLogs(app.db, request.principal, request.params.id, after, request.query.limit, request.query.tail);
      }
      if (request.query.tail !== undefined)
        throw new BadRequestError('tail reads what is stored; it does not combine with following', ['tail: not with follow']);
      // The execution must exist before the stream opens, so a 404 is still an ErrorBody.
      await readLogs(app.db, request.principal, request.params.id, after, 1);
      const release = slots.acquire(request.principal.userId);
      reply.hijack();
      streams.add(reply.raw);
      reply.raw.on('close', () => {
        streams.delete(reply.raw);
        release();
      });
      const context = { principal: request.principal, executionId: request.params.id, requestId: request.id, log: request.log };
      await streamLogs(app, context, reply.raw, after, () => shuttingDown);
      release();
      return reply;
    },
  );
}
