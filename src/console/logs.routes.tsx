// The log viewer's routes: a step's log page, the chunks of lines it (and the run page) loads as they are
// reached or written, and the raw log as a download. Every line comes from the API's byte-bounded pages.

import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { isTerminalStep } from '../engine/run-state.ts';
import { ConcurrencySlots } from '../platform/http/concurrency-slots.ts';
import type { App } from '../platform/http/app.ts';
import type { ApiCaller } from './console-api.ts';
import { PAGE, RecordParams, type PageContext, type Pages } from './pages.tsx';
import { renderFragment } from './views/layout.tsx';
import { LOG_CHUNK_LINES, LogChunk, lineUrl, MAX_WINDOW_CHUNKS, StepLogPage, type LogChunkProps, type LogLineView, type LogView } from './views/logs.tsx';

const Seq = Type.Integer({ minimum: 0, maximum: 2_147_483_647 });
const SearchText = Type.String({ minLength: 1, maxLength: 200 });

interface LogsPage {
  data: (LogLineView & { bytes?: string; partial?: boolean })[];
  meta: { limit: number; lastSeq: number; complete: boolean; stepStatus: string };
}

/** The step's log page URL in the console. */
export const stepLogUrl = (orgPath: string, stepId: string) => `${orgPath}/steps/${encodeURIComponent(stepId)}/logs`;

/** A chunk's contents from one API page of lines. */
function chunkOf(page: LogsPage): Pick<LogChunkProps, 'lines' | 'lastSeq' | 'more' | 'complete' | 'stepStatus'> {
  const { lastSeq, complete, stepStatus, limit } = page.meta;
  // A full page may have more behind it; so does an ended step whose last lines are not all read.
  const more = page.data.length >= limit || (isTerminalStep(stepStatus) && !complete);
  return { lines: page.data, lastSeq, complete, stepStatus, more };
}

const readLines = (api: ApiCaller, stepId: string, query: Record<string, string | number | undefined>) =>
  api.get<LogsPage>(`/pipeline-step-executions/${encodeURIComponent(stepId)}/logs`, query);

export function consoleLogRoutes(app: App, pages: Pages) {
  /** Where the chunk after this one comes from. */
  const nextUrl = (ctx: PageContext, stepId: string, view: LogView, chunk: number, search?: string) => (after: number) => {
    // Search results do not make a window: they go on however many chunks they take.
    const query = new URLSearchParams({ after: String(after), view, chunk: String(view === 'search' ? 1 : chunk + 1) });
    if (search !== undefined) query.set('q', search);
    return `${ctx.orgPath}/steps/${encodeURIComponent(stepId)}/log-lines?${query}`;
  };

  app.get(
    '/orgs/:org/steps/:id/logs',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: RecordParams,
        querystring: Type.Object({
          after: Type.Optional(Seq),
          tail: Type.Optional(Type.Integer({ minimum: 1, maximum: LOG_CHUNK_LINES })),
          q: Type.Optional(Type.String({ maxLength: 200 })),
          /** A line or a range to mark, as the keyboard's "Mark lines" form sends it: the page opens there with its anchor. */
          lines: Type.Optional(Type.String({ pattern: '^\\s*[0-9]{1,10}\\s*(-\\s*[0-9]{1,10}\\s*)?$' })),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const stepId = request.params.id;
      if (request.query.lines !== undefined) {
        const [from, until = from] = request.query.lines.split('-').map((n) => Math.min(Number(n), 2_147_483_647));
        return reply.redirect(lineUrl(stepLogUrl(ctx.orgPath, stepId), Math.min(from!, until), Math.max(from!, until)), 303);
      }
      const search = request.query.q?.trim() || undefined;
      const [step, page] = await Promise.all([
        ctx.api.get(`/pipeline-step-executions/${encodeURIComponent(stepId)}`),
        search !== undefined
          ? readLines(ctx.api, stepId, { after: request.query.after ?? 0, limit: LOG_CHUNK_LINES, contains: search })
          : request.query.tail !== undefined
            ? readLines(ctx.api, stepId, { tail: request.query.tail })
            : readLines(ctx.api, stepId, { after: request.query.after ?? 0, limit: LOG_CHUNK_LINES }),
      ]);
      const after = request.query.tail !== undefined && page.data.length ? page.data[0].seq - 1 : (request.query.after ?? 0);
      const first = chunkOf(page);
      // The tail is the end of what is stored: more may only be written.
      if (request.query.tail !== undefined) first.more = false;
      const logUrl = stepLogUrl(ctx.orgPath, stepId);
      return pages.html(
        reply,
        `Log of ${step.data.stepName}`,
        ctx.viewer,
        <StepLogPage
          orgPath={ctx.orgPath}
          step={step.data}
          logUrl={logUrl}
          after={after}
          search={search}
          first={{ ...first, nextUrl: nextUrl(ctx, stepId, search === undefined ? 'window' : 'search', 1, search) }}
        />,
      );
    },
  );

  // The lines after `after`, and what follows them, for htmx to put in place of the previous chunk's end.
  app.get(
    '/orgs/:org/steps/:id/log-lines',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: RecordParams,
        querystring: Type.Object({
          after: Seq,
          view: Type.Union([Type.Literal('window'), Type.Literal('search'), Type.Literal('embed')]),
          chunk: Type.Integer({ minimum: 1, maximum: MAX_WINDOW_CHUNKS }),
          q: Type.Optional(SearchText),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { after, view, chunk, q } = request.query;
      const stepId = request.params.id;
      const page = await readLines(ctx.api, stepId, { after, limit: LOG_CHUNK_LINES, contains: view === 'search' ? q : undefined });
      const fragment = (
        <LogChunk
          {...chunkOf(page)}
          view={view}
          logUrl={stepLogUrl(ctx.orgPath, stepId)}
          chunk={chunk}
          nextUrl={nextUrl(ctx, stepId, view, chunk, view === 'search' ? q : undefined)}
        />
      );
      return reply.type('text/html; charset=utf-8').send(renderFragment(fragment));
    },
  );

  // A download reads the next page only once the client has taken the last one, so a stalled client
  // holds one page; their number is bounded, and one that takes too long is cut off.
  const downloads = new ConcurrencySlots({
    what: 'raw log downloads',
    code: 'Api:EventStream:TOO_MANY_STREAMS',
    maxPerCaller: 4,
    maxPerOrganization: 16,
    maxTotal: 64,
  });

  // The step's output as it was written, every stream in order, as a file.
  app.get('/orgs/:org/steps/:id/logs/raw', { ...PAGE, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    const stepId = request.params.id;
    const firstPage = await readLines(ctx.api, stepId, { after: 0, limit: RAW_PAGE_LINES });
    const release = downloads.acquire({ caller: ctx.me.userId, organizationId: ctx.me.organizationId });
    const body = Readable.from(rawLog(ctx.api, stepId, firstPage), { highWaterMark: 1 });
    const deadline = setTimeout(() => body.destroy(new Error('the raw log download took too long')), DOWNLOAD_MS);
    const done = () => {
      clearTimeout(deadline);
      release();
    };
    // A browser gone while the first page was read has closed the response already: no 'close' is coming.
    if (reply.raw.destroyed) done();
    else reply.raw.once('close', done);
    return reply.type('text/plain; charset=utf-8').header('Content-Disposition', `attachment; filename="step-${stepId}.log"`).send(body);
  });
}

/** The bytes of every line from `first` on, page after page, each followed by its newline unless partial. */
async function* rawLog(api: ApiCaller, stepId: string, first: LogsPage): AsyncGenerator<Buffer> {
  let page = first;
  while (page.data.length) {
    yield Buffer.concat(page.data.flatMap((line) => [line.bytes ? Buffer.from(line.bytes, 'base64') : Buffer.from(line.line), line.partial ? EMPTY : NEWLINE]));
    page = await readLines(api, stepId, { after: page.meta.lastSeq, limit: RAW_PAGE_LINES });
  }
}

/** The API's largest page. */
const RAW_PAGE_LINES = 2000;
/** A raw log download still going after this long is cut off. */
const DOWNLOAD_MS = 15 * 60_000;
const EMPTY = Buffer.alloc(0);
const NEWLINE = Buffer.from('\n');
