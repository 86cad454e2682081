import type { App } from '../platform/http/app.ts';
import { IdParams } from '../platform/schema.ts';
import { LogsPage, LogsQuery } from './runs.schema.ts';
import { followLogs, readLogs } from './step-logs.service.ts';

function wantsStream(accept: string | undefined, follow: boolean | undefined): boolean {
  return follow === true || (accept ?? '').includes('text/event-stream');
}

export async function stepLogRoutes(app: App) {
  // Follow streams can last as long as a step: on shutdown they end (clients resume with Last-Event-ID)
  // instead of holding the drain open.
  let shuttingDown = false;
  app.addHook('preClose', async () => {
    shuttingDown = true;
  });

  app.get('/pipeline-step-executions/:id/logs', {
    schema: {
      tags: ['pipeline-step-executions'],
      summary: 'Read the lines a step execution wrote, or follow them as Server-Sent Events while it runs',
      description:
        'JSON: lines after `after` (seq), oldest first. With `follow=true` or `Accept: text/event-stream`: an SSE stream of ' +
        '`line` events (id = seq, data = the line as JSON) that ends with an `end` event once the step has ended. ' +
        'A reconnecting client sends Last-Event-ID to resume.',
      params: IdParams,
      querystring: LogsQuery,
      response: { 200: LogsPage },
    },
  }, async (request, reply) => {
    const lastEventId = Number(request.headers['last-event-id']);
    const after = request.query.after ?? (Number.isInteger(lastEventId) && lastEventId > 0 ? lastEventId : 0);
    if (!wantsStream(request.headers.accept, request.query.follow)) {
      return readLogs(app.db, request.principal, request.params.id, after, request.query.limit);
    }
    // The execution must exist before the stream opens, so a 404 is still an ErrorBody.
    await readLogs(app.db, request.principal, request.params.id, after, 1);
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': request.id });
    let closed = false;
    raw.on('close', () => (closed = true));
    try {
      await followLogs(app.db, request.principal, request.params.id, after, {
        line: (line) => raw.write(`event: line\nid: ${line.seq}\ndata: ${JSON.stringify(line)}\n\n`),
        end: (status) => raw.write(`event: end\ndata: ${JSON.stringify({ status })}\n\n`),
        closed: () => closed || shuttingDown,
      });
    } catch (error) {
      request.log.error({ err: error }, 'failed to stream logs');
      raw.write(`event: error\ndata: ${JSON.stringify({ code: 'Api:Internal:ERROR', message: 'The log stream failed', requestId: request.id })}\n\n`);
    }
    raw.end();
    return reply;
  });
}
