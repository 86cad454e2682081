// The web console (docs/console.md): pages rendered on the server, at paths beside the API's. Pages and
// forms take the session cookie, never a bearer credential; what they show and do comes from the API,
// called in-process with the session's key (console-api.ts).

import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from '@sinclair/typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { BadRequestError, ForbiddenError } from '../platform/errors.ts';
import { hasPermission, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { toAppError } from '../platform/http/error-handler.ts';
import { EventStreams, STREAM_KEEPALIVE_MS } from '../platform/http/event-stream.ts';
import { StreamSlots } from '../platform/http/stream-slots.ts';
import { treeProblems } from '../platform/http/input-rules.ts';
import { registerAssets, type Assets } from './assets.ts';
import { ApiCallError, type ApiCaller } from './console-api.ts';
import { consoleEnvironmentRoutes } from './environments.routes.tsx';
import { consoleLogRoutes } from './logs.routes.tsx';
import { consolePlanRoutes } from './plans.routes.tsx';
import { consoleStackRoutes } from './stacks.routes.tsx';
import { CsrfField, IdText, OrgParams, PAGE, pages as makePages, RecordParams, SignInRequired, type PageContext } from './pages.tsx';
import { csrfMatches, currentSession, issueSignInToken, sessionLive, signIn, SignInRefused, signInTokenMatches, signOut } from './sessions.service.ts';
import { renderFragment, renderPage } from './views/layout.tsx';
import { RunBody, RunPage, type PipelineStepView, type RunPageProps } from './views/run.tsx';
import { RunsInbox } from './views/runs.tsx';
import { ErrorMessage, SignIn } from './views/sign-in.tsx';

/** No inline script or style, nothing from elsewhere, never framed. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const FORM_BODY_LIMIT = 16 * 1024;

export async function consoleRoutes(app: App) {
  const assets = await registerAssets(app);

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    const fields = Object.fromEntries(new URLSearchParams(body as string));
    const problems = treeProblems(fields, 'body');
    done(problems.length ? new BadRequestError('The form breaks the input rules', problems) : null, fields);
  });
  // A form posted from another site is refused before anything reads it (SameSite and the tokens are the other two locks).
  app.addHook('preHandler', async (request) => {
    if (request.method === 'POST' && !fromThisSite(request)) {
      throw new ForbiddenError('The form came from another site', 'Auth:Csrf:INVALID');
    }
  });
  app.addHook('onSend', async (request, reply) => {
    if (request.protocol === 'https') reply.header('Strict-Transport-Security', 'max-age=31536000');
    reply.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    reply.header('X-Frame-Options', 'DENY');
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('Referrer-Policy', 'same-origin');
    if (!request.url.startsWith('/assets/')) reply.header('Cache-Control', 'no-store');
  });
  app.setErrorHandler((error: FastifyError, request, reply) => renderError(assets, error, request, reply));

  const pages = makePages(app, assets);
  const html = pages.html;
  const pageContext = pages.context;
  const page = PAGE;
  consoleLogRoutes(app, pages);
  consolePlanRoutes(app, pages);
  consoleStackRoutes(app, pages);
  consoleEnvironmentRoutes(app, pages);

  app.get('/', page, async (request, reply) => {
    const session = await currentSession(app, request);
    return reply.redirect(session ? `/orgs/${encodeURIComponent(session.homeOrganizationId)}/runs` : '/sign-in', 303);
  });

  app.get('/sign-in', page, async (request, reply) => html(reply, 'Sign in', undefined, <SignIn signInToken={issueSignInToken(request, reply)} />));

  app.post(
    '/sign-in',
    { ...page, schema: { hide: true, body: Type.Object({ apiKey: Type.String({ maxLength: 512 }), _signin: CsrfField }) } },
    async (request, reply) => {
      const again = (status: number, error: string) =>
        html(reply.status(status), 'Sign in', undefined, <SignIn signInToken={issueSignInToken(request, reply)} error={error} />);
      if (!signInTokenMatches(request, request.body._signin)) return again(403, 'The sign-in form expired or came from another site: try again.');
      try {
        const me = await signIn(app, request, reply, request.body.apiKey.trim());
        return reply.redirect(`/orgs/${encodeURIComponent(me.organizationId)}/runs`, 303);
      } catch (error) {
        if (error instanceof SignInRefused) return again(401, `That key cannot sign in: ${error.message}.`);
        throw error;
      }
    },
  );

  app.post(
    '/sign-out',
    { ...page, schema: { hide: true, body: Type.Object({ _csrf: CsrfField, everywhere: Type.Optional(Type.String({ maxLength: 8 })) }) } },
    async (request, reply) => {
      const session = await currentSession(app, request);
      if (session && csrfMatches(session, request.body._csrf)) await signOut(app, request, reply, session, request.body.everywhere === 'yes');
      return reply.redirect('/sign-in', 303);
    },
  );

  app.get(
    '/orgs/:org/runs',
    {
      ...page,
      schema: {
        hide: true,
        params: OrgParams,
        querystring: Type.Object({
          status: Type.Optional(Type.String({ maxLength: 32 })),
          stackId: Type.Optional(IdText),
          environmentId: Type.Optional(Type.Union([IdText, Type.Literal('')])),
          createdById: Type.Optional(IdText),
          cursor: Type.Optional(Type.String({ maxLength: 512 })),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pageContext(request, request.params.org);
      const { cursor, ...query } = request.query;
      const filter = { ...query, environmentId: query.environmentId || undefined };
      const [runs, environments] = await Promise.all([
        ctx.api.get('/pipeline-runs', { ...filter, cursor, order: 'desc', limit: 50 }),
        ctx.api.get('/environments', { limit: ENVIRONMENT_CHOICES }),
      ]);
      const stackIds = new Set<string>(runs.data.map((r: { attachedEntityId?: string }) => r.attachedEntityId).filter(Boolean));
      if (filter.stackId) stackIds.add(filter.stackId);
      return html(
        reply,
        'Runs',
        ctx.viewer,
        <RunsInbox
          orgPath={ctx.orgPath}
          runs={runs.data}
          stackNames={await stackNames(ctx.api, stackIds)}
          environments={environments.data}
          filter={filter}
          viewerId={ctx.me.userId}
          nextCursor={runs.meta.nextCursor}
        />,
      );
    },
  );

  app.get('/orgs/:org/runs/:id', { ...page, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pageContext(request, request.params.org);
    const view = await loadRun(ctx, request.params.id);
    const liveUrl = FINISHED.has(view.run.status) ? undefined : `${ctx.orgPath}/runs/${encodeURIComponent(view.run.id)}/live`;
    return html(reply, `Run ${view.run.id.slice(-8)}`, ctx.viewer, <RunPage {...view} liveUrl={liveUrl} />);
  });

  const liveStreams = new EventStreams(app, 'console run');
  // Each live page costs a few in-process API reads every LIVE_POLL_MS: bounded per user, per organization
  // (however many service accounts it makes) and per process.
  const liveSlots = new StreamSlots({ what: 'console pages followed live', code: 'Api:EventStream:TOO_MANY_STREAMS', maxPerCaller: 16, maxTotal: 256 });
  const liveSlotsOfOrganizations = new StreamSlots({
    what: 'console pages followed live in one organization',
    code: 'Api:EventStream:TOO_MANY_STREAMS',
    maxPerCaller: 64,
  });

  // The run page's event stream: the page's body as HTML whenever it changes, then `done` once the run
  // has finished. The id is the version of what was sent: a reconnecting page gets nothing it has.
  app.get('/orgs/:org/runs/:id/live', { ...page, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pageContext(request, request.params.org);
    const releaseOrganization = liveSlotsOfOrganizations.acquire(ctx.me.organizationId);
    let releaseCaller: () => void;
    try {
      releaseCaller = liveSlots.acquire(ctx.me.userId);
    } catch (error) {
      releaseOrganization();
      throw error;
    }
    const release = () => {
      releaseCaller();
      releaseOrganization();
    };
    const lastEventId = request.headers['last-event-id'];
    await liveStreams.serve(reply, request.id, release, async (stream) => {
      let sent = typeof lastEventId === 'string' ? lastEventId : undefined;
      const pipelines: PipelineSteps = new Map();
      let lastWrite = Date.now();
      const deadline = Date.now() + LIVE_STREAM_MS;
      // Signed out (here or everywhere) meanwhile: the stream ends with the session.
      while (!stream.closed() && Date.now() < deadline && (await sessionLive(app, ctx.session))) {
        const view = await loadRun(ctx, request.params.id, pipelines);
        const version = runVersion(view);
        if (version !== sent) {
          await stream.send(sseHtml('run', version, renderFragment(<RunBody {...view} />)));
          sent = version;
          lastWrite = Date.now();
        }
        if (FINISHED.has(view.run.status)) return stream.send(sseHtml('done', version, ''));
        if (Date.now() - lastWrite >= STREAM_KEEPALIVE_MS) {
          await stream.send(': keepalive\n\n');
          lastWrite = Date.now();
        }
        await sleep(LIVE_POLL_MS);
      }
    });
  });

  const ActionForm = Type.Object({ _csrf: Type.Optional(CsrfField) });

  app.post(
    '/orgs/:org/runs/:id/:verb',
    {
      ...page,
      schema: {
        hide: true,
        params: Type.Object({ ...RecordParams.properties, verb: Type.Union([Type.Literal('cancel'), Type.Literal('retry')]) }),
        body: ActionForm,
      },
    },
    async (request, reply) => {
      const ctx = await pageContext(request, request.params.org);
      const id = encodeURIComponent(request.params.id);
      await ctx.api.post(`/pipeline-runs/${id}/${request.params.verb}`);
      return reply.redirect(`${ctx.orgPath}/runs/${id}`, 303);
    },
  );

  app.post(
    '/orgs/:org/steps/:id/:verb',
    {
      ...page,
      schema: {
        hide: true,
        params: Type.Object({ ...RecordParams.properties, verb: Type.Union([Type.Literal('approve'), Type.Literal('reject')]) }),
        querystring: Type.Object({ run: IdText }),
        body: ActionForm,
      },
    },
    async (request, reply) => {
      const ctx = await pageContext(request, request.params.org);
      const step = (await ctx.api.post(`/pipeline-step-executions/${encodeURIComponent(request.params.id)}/${request.params.verb}`)).data;
      return reply.redirect(`${ctx.orgPath}/runs/${encodeURIComponent(step.pipelineRunId ?? request.query.run)}`, 303);
    },
  );
}

/** How many environments the inbox offers to filter by (the URL takes any environment's id). */
const ENVIRONMENT_CHOICES = 200;
const FINISHED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
/** How often a live page's stream reads its run again. */
const LIVE_POLL_MS = 2000;
/** A live stream ends after this long; the browser reconnects with Last-Event-ID and goes on. */
const LIVE_STREAM_MS = 5 * 60_000;

/** A pipeline version's steps, by version id: versions never change, so a live page reads each once. */
type PipelineSteps = Map<string, PipelineStepView[]>;

/** Everything the run page shows, read through the API. */
async function loadRun(ctx: PageContext, runId: string, pipelines: PipelineSteps = new Map()): Promise<RunPageProps> {
  const id = encodeURIComponent(runId);
  const run = (await ctx.api.get(`/pipeline-runs/${id}`)).data;
  const [steps, transitions, names, pipelineSteps] = await Promise.all([
    ctx.api.get(`/pipeline-runs/${id}/step-executions`, { limit: 200, attemptEpoch: run.attemptEpoch }),
    ctx.api.get(`/pipeline-runs/${id}/transitions`, { limit: 200 }),
    stackNames(ctx.api, new Set(run.attachedEntityId ? [run.attachedEntityId] : [])),
    pipelineStepsOf(ctx.api, run.pipelineVersionId, pipelines),
  ]);
  return {
    orgPath: ctx.orgPath,
    run,
    stackName: names.get(run.attachedEntityId),
    steps: steps.data,
    pipelineSteps,
    transitions: transitions.data,
    canOperate: hasPermission(ctx.me.role as Role, 'run:operate'),
    csrfToken: ctx.viewer.csrfToken,
    viewerId: ctx.me.userId,
  };
}

async function pipelineStepsOf(api: ApiCaller, versionId: string, known: PipelineSteps): Promise<PipelineStepView[]> {
  const cached = known.get(versionId);
  if (cached) return cached;
  const version = (await api.get(`/pipeline-versions/${encodeURIComponent(versionId)}`)).data;
  const steps = (version.config?.steps ?? []).map((s: PipelineStepView) => ({ id: s.id, name: s.name ?? s.id, needs: s.needs }));
  known.set(versionId, steps);
  return steps;
}

/** What the run page shows changes exactly when one of these does. */
function runVersion(view: RunPageProps): string {
  const parts = [view.run.status, view.run.attemptEpoch, (view.run as { updatedAt?: string }).updatedAt, view.transitions.length, view.canOperate];
  for (const step of view.steps) parts.push(step.id, step.status, (step as { updatedAt?: string }).updatedAt);
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}

/** An SSE event whose data is HTML, one `data:` line per line of it. */
function sseHtml(event: string, id: string, html: string): string {
  // SSE ends a line at CR as well as LF: a CR in a tenant's text must not end the data line early.
  return `event: ${event}\nid: ${id}\n${html
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join('')}\n`;
}

/** What the browser says of where a request comes from (Sec-Fetch-Site, else Origin) names this site, or nothing. */
function fromThisSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return true;
  try {
    return new URL(origin).host === request.host;
  } catch {
    return false;
  }
}

/** The names of the stacks, by id; a stack the key cannot read (or that is gone) keeps its id. */
async function stackNames(api: ApiCaller, ids: Set<string>): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  await Promise.all(
    [...ids].map(async (id) => {
      try {
        names.set(id, (await api.get(`/stacks/${encodeURIComponent(id)}`)).data.name);
      } catch (error) {
        if (!(error instanceof ApiCallError) || error.status !== 404) throw error;
      }
    }),
  );
  return names;
}

/** An error as a page: the sign-in form when the session is missing or its key no longer works, else what went wrong. */
function renderError(assets: Assets, error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof SignInRequired || (error instanceof ApiCallError && error.status === 401)) return reply.redirect('/sign-in', 303);
  let status = 500;
  let message = 'An internal error occurred';
  let code: string | undefined = 'Api:Internal:ERROR';
  if (error instanceof ApiCallError) {
    ({ status, message, code } = error);
  } else {
    const known = toAppError(error);
    if (known) ({ status, message, code } = known);
    else request.log.error({ err: error }, 'failed console request');
  }
  return reply
    .status(status)
    .type('text/html; charset=utf-8')
    .send(renderPage({ title: 'Error', assets, children: <ErrorMessage status={status} message={message} code={code} /> }));
}
