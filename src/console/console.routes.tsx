// The web console (docs/console.md): pages rendered on the server, at paths beside the API's. Pages and
// forms take the session cookie, never a bearer credential; what they show and do comes from the API,
// called in-process with the session's key (console-api.ts).

import { type Static, Type } from '@sinclair/typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { BadRequestError, ForbiddenError } from '../platform/errors.ts';
import { isTerminalRun } from '../engine/run-state.ts';
import { hasPermission, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { toAppError } from '../platform/http/error-handler.ts';
import { treeProblems } from '../platform/http/input-rules.ts';
import { registerAssets, type Assets } from './assets.ts';
import { peopleOf } from './forms.ts';
import { ApiCallError, type ApiCaller } from './console-api.ts';
import { consoleEnvironmentRoutes } from './environments.routes.tsx';
import { consoleAccessRoutes } from './access.routes.tsx';
import { consoleAccountRoutes, rememberedGitServers } from './account.routes.tsx';
import { LiveVersion, livePages, versionOf } from './live.ts';
import { consoleModuleRoutes } from './modules.routes.tsx';
import { consoleOrganizationRoutes } from './organizations.routes.tsx';
import { consolePaletteRoutes } from './palette.routes.tsx';
import { consolePipelineRoutes } from './pipelines.routes.tsx';
import { consoleSourceRoutes } from './sources.routes.tsx';
import { setTheme, THEMES, themeOf } from './preferences.ts';
import { consoleLogRoutes } from './logs.routes.tsx';
import { consolePlanRoutes } from './plans.routes.tsx';
import { consoleStackRoutes } from './stacks.routes.tsx';
import { CsrfField, IdText, OrgParams, PAGE, pages as makePages, RecordParams, sameSitePath, SignInRequired, type PageContext } from './pages.tsx';
import { csrfMatches, currentSession, issueSignInToken, signIn, SignInRefused, signInTokenMatches, signOut } from './sessions.service.ts';
import { renderFragment, renderPage } from './views/layout.tsx';
import { RunBody, RunPage, type PipelineStepView, type RunPageProps } from './views/run.tsx';
import { inboxLink, type RunFilter, type RunRow, RunsInbox, type RunsInboxProps, RunsTable } from './views/runs.tsx';
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
  const live = livePages(app, pages);
  consoleLogRoutes(app, pages);
  consolePlanRoutes(app, pages);
  consoleStackRoutes(app, pages, live);
  consoleEnvironmentRoutes(app, pages);
  consolePaletteRoutes(app, pages);
  consoleModuleRoutes(app, pages, live);
  consoleAccessRoutes(app, pages);
  consolePipelineRoutes(app, pages);
  consoleSourceRoutes(app, pages);
  consoleOrganizationRoutes(app, pages);
  consoleAccountRoutes(app, pages);

  app.get('/', PAGE, async (request, reply) => {
    const session = await currentSession(app, request);
    return reply.redirect(session ? `/orgs/${encodeURIComponent(session.homeOrganizationId)}/runs` : '/sign-in', 303);
  });

  app.get('/sign-in', PAGE, async (request, reply) =>
    pages.html(reply, 'Sign in', undefined, <SignIn signInToken={issueSignInToken(request, reply)} gitServers={await rememberedGitServers(app, request)} />),
  );

  app.post(
    '/sign-in',
    { ...PAGE, schema: { hide: true, body: Type.Object({ apiKey: Type.String({ maxLength: 512 }), _signin: CsrfField }) } },
    async (request, reply) => {
      const again = async (status: number, error: string) =>
        pages.html(
          reply.status(status),
          'Sign in',
          undefined,
          <SignIn signInToken={issueSignInToken(request, reply)} error={error} gitServers={await rememberedGitServers(app, request)} />,
        );
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

  // The theme form, on every page: a signed-in reader's form carries the session's token; the sign-in
  // page's cannot, and a cross-site POST is refused before this runs either way.
  app.post(
    '/preferences/theme',
    {
      ...PAGE,
      schema: {
        hide: true,
        body: Type.Object({
          _csrf: Type.Optional(CsrfField),
          theme: Type.Union(THEMES.map((t) => Type.Literal(t))),
          back: Type.Optional(Type.String({ maxLength: 2048 })),
        }),
      },
    },
    async (request, reply) => {
      const session = await currentSession(app, request);
      if (session && !csrfMatches(session, request.body._csrf)) {
        throw new ForbiddenError('The form is out of date or came from another site: reload the page and try again', 'Auth:Csrf:INVALID');
      }
      setTheme(request, reply, request.body.theme);
      return reply.redirect(sameSitePath(request.body.back), 303);
    },
  );

  app.post(
    '/sign-out',
    { ...PAGE, schema: { hide: true, body: Type.Object({ _csrf: CsrfField, everywhere: Type.Optional(Type.String({ maxLength: 8 })) }) } },
    async (request, reply) => {
      const session = await currentSession(app, request);
      if (session && csrfMatches(session, request.body._csrf)) await signOut(app, request, reply, session, request.body.everywhere === 'yes');
      return reply.redirect('/sign-in', 303);
    },
  );

  app.get(
    '/orgs/:org/runs',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: OrgParams,
        querystring: Type.Object({ ...InboxQuery.properties, cursor: Type.Optional(Type.String({ maxLength: 512 })) }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { cursor, ...query } = request.query;
      const filter = inboxFilter(query);
      const inbox = await loadInbox(ctx, filter, cursor);
      // The first page follows new runs as they come; an older page stays as it was read.
      const liveUrl = cursor
        ? undefined
        : inboxLink(ctx.orgPath, filter, { v: inboxVersion({ data: inbox.runs, nextCursor: inbox.nextCursor }) }, '/runs/live');
      return pages.html(reply, 'Runs', ctx.viewer, <RunsInbox {...inbox} liveUrl={liveUrl} />);
    },
  );

  // The inbox's event stream: its first page of runs whenever a run comes or changes. It never finishes.
  app.get(
    '/orgs/:org/runs/live',
    { ...PAGE, schema: { hide: true, params: OrgParams, querystring: Type.Object({ ...InboxQuery.properties, v: LiveVersion }) } },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { v, ...query } = request.query;
      const filter = inboxFilter(query);
      // Only the runs are read to tell whether anything changed; names and the rest only when it did.
      await live.serve(request, reply, ctx, 'runs', v, async () => {
        const runs = await readInboxRuns(ctx, filter);
        return {
          version: inboxVersion({ data: runs.data, nextCursor: runs.meta.nextCursor }),
          render: async () => renderFragment(<RunsTable {...(await inboxOf(ctx, filter, runs))} />),
          finished: false,
        };
      });
    },
  );

  app.get('/orgs/:org/runs/:id', { ...PAGE, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    const view = await loadRun(ctx, request.params.id);
    const liveUrl = isTerminalRun(view.run.status) ? undefined : `${ctx.orgPath}/runs/${encodeURIComponent(view.run.id)}/live?v=${runVersion(view)}`;
    return pages.html(reply, `Run ${view.run.id.slice(-8)}`, ctx.viewer, <RunPage {...view} liveUrl={liveUrl} />);
  });

  // The run page's event stream: the page's body whenever it changes, then `done` once the run has finished.
  live.recordStream('runs', 'run', (ctx, id) => {
    const pipelines: PipelineSteps = new Map();
    return async () => {
      const view = await loadRun(ctx, id, pipelines);
      return { version: runVersion(view), render: async () => renderFragment(<RunBody {...view} />), finished: isTerminalRun(view.run.status) };
    };
  });

  const ActionForm = Type.Object({ _csrf: Type.Optional(CsrfField) });

  app.post(
    '/orgs/:org/runs/:id/:verb',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: Type.Object({ ...RecordParams.properties, verb: Type.Union([Type.Literal('cancel'), Type.Literal('retry')]) }),
        body: ActionForm,
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const id = encodeURIComponent(request.params.id);
      await ctx.api.post(`/pipeline-runs/${id}/${request.params.verb}`);
      return reply.redirect(`${ctx.orgPath}/runs/${id}`, 303);
    },
  );

  app.post(
    '/orgs/:org/steps/:id/:verb',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: Type.Object({ ...RecordParams.properties, verb: Type.Union([Type.Literal('approve'), Type.Literal('reject')]) }),
        querystring: Type.Object({ run: IdText }),
        body: ActionForm,
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const step = (await ctx.api.post(`/pipeline-step-executions/${encodeURIComponent(request.params.id)}/${request.params.verb}`)).data;
      return reply.redirect(`${ctx.orgPath}/runs/${encodeURIComponent(step.pipelineRunId ?? request.query.run)}`, 303);
    },
  );
}

/** What the inbox's table shows changes exactly when one of these does. */
function inboxVersion(runs: Pick<InboxRuns, 'data'> & { nextCursor?: string }): string {
  return versionOf([runs.data.map((r) => [r.id, r.status, (r as { updatedAt?: string }).updatedAt]), runs.nextCursor]);
}

/** The inbox's filters, as its URL's query string holds them. */
const InboxQuery = Type.Object({
  status: Type.Optional(Type.String({ maxLength: 32 })),
  stackId: Type.Optional(IdText),
  environmentId: Type.Optional(Type.Union([IdText, Type.Literal('')])),
  createdById: Type.Optional(IdText),
  ref: Type.Optional(Type.String({ maxLength: 255 })),
  commitSha: Type.Optional(Type.Union([Type.String({ pattern: '^[0-9a-f]{4,40}$' }), Type.Literal('')])),
});

/** The filters of an inbox URL, an empty field of its form being no filter. */
function inboxFilter(query: Static<typeof InboxQuery>): RunFilter {
  return Object.fromEntries(Object.entries(query).map(([key, value]) => [key, value?.trim() || undefined]));
}

/** One page of the inbox, read through the API. */
async function loadInbox(ctx: PageContext, filter: RunFilter, cursor?: string): Promise<RunsInboxProps> {
  return inboxOf(ctx, filter, await readInboxRuns(ctx, filter, cursor));
}

interface InboxRuns {
  data: RunRow[];
  meta: { nextCursor?: string };
}

/** One page of the inbox's runs: all a live inbox reads to know whether anything changed. */
function readInboxRuns(ctx: PageContext, filter: RunFilter, cursor?: string): Promise<InboxRuns> {
  return ctx.api.get('/pipeline-runs', { ...filter, cursor, order: 'desc', limit: 50 });
}

/** The rest of what the inbox shows beside its runs: the stacks' names and the environments to filter by. */
async function inboxOf(ctx: PageContext, filter: RunFilter, runs: InboxRuns): Promise<RunsInboxProps> {
  const stackIds = new Set<string>(runs.data.map((r) => r.attachedEntityId).filter((id): id is string => Boolean(id)));
  if (filter.stackId) stackIds.add(filter.stackId);
  const [environments, names, people] = await Promise.all([
    ctx.api.get('/environments', { limit: ENVIRONMENT_CHOICES }),
    stackNames(ctx.api, stackIds),
    peopleOf(ctx.api),
  ]);
  return {
    orgPath: ctx.orgPath,
    runs: runs.data,
    stackNames: names,
    environments: environments.data,
    filter,
    viewerId: ctx.me.userId,
    people,
    nextCursor: runs.meta.nextCursor,
  };
}

/** How many environments the inbox offers to filter by (the URL takes any environment's id). */
const ENVIRONMENT_CHOICES = 200;

/** A pipeline version's steps, by version id: versions never change, so a live page reads each once. */
type PipelineSteps = Map<string, PipelineStepView[]>;

/** Everything the run page shows, read through the API. */
async function loadRun(ctx: PageContext, runId: string, pipelines: PipelineSteps = new Map()): Promise<RunPageProps> {
  const id = encodeURIComponent(runId);
  const run = (await ctx.api.get(`/pipeline-runs/${id}`)).data;
  const [steps, transitions, names, pipelineSteps, people] = await Promise.all([
    ctx.api.get(`/pipeline-runs/${id}/step-executions`, { limit: 200, attemptEpoch: run.attemptEpoch }),
    ctx.api.get(`/pipeline-runs/${id}/transitions`, { limit: 200 }),
    stackNames(ctx.api, new Set(run.attachedEntityId ? [run.attachedEntityId] : [])),
    pipelineStepsOf(ctx.api, run.pipelineVersionId, pipelines),
    peopleOf(ctx.api),
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
    people,
  };
}

async function pipelineStepsOf(api: ApiCaller, versionId: string, known: PipelineSteps): Promise<PipelineStepView[]> {
  const cached = known.get(versionId);
  if (cached) return cached;
  const version = (await api.get(`/pipeline-versions/${encodeURIComponent(versionId)}`)).data;
  const steps = (version.config?.steps ?? []).map((s: PipelineStepView & { with?: { message?: unknown } }) => ({
    id: s.id,
    name: s.name ?? s.id,
    needs: s.needs,
    ...(typeof s.with?.message === 'string' ? { message: s.with.message } : {}),
  }));
  known.set(versionId, steps);
  return steps;
}

/** What the run page shows changes exactly when one of these does. */
function runVersion(view: RunPageProps): string {
  const parts = [view.run.status, view.run.attemptEpoch, (view.run as { updatedAt?: string }).updatedAt, view.transitions.length, view.canOperate];
  for (const step of view.steps) parts.push(step.id, step.status, (step as { updatedAt?: string }).updatedAt);
  return versionOf(parts);
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
    .send(
      renderPage({
        title: 'Error',
        assets,
        theme: themeOf(request),
        path: request.url,
        children: <ErrorMessage status={status} message={message} code={code} />,
      }),
    );
}
