// The console's stack pages: the list and a new stack, a stack's page with its forms (start a run,
// variables, sensitive variables; rename, change the code, delete), and the diff of two state versions.
// A form the API refuses comes back with the API's message above it, and what the reader typed kept
// (but never a sensitive value).

import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import type { ComponentChildren } from 'preact';
import { ForbiddenError } from '../platform/errors.ts';
import { VariableName } from '../stacks/stack-variables.schema.ts';
import { PUSH_ACTIONS } from '../stacks/stacks.schema.ts';
import { hasPermission, roleAtLeast, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { ApiCallError } from './console-api.ts';
import { answerForm, CHOICES, confirmTyped, environmentChoices, type FormError, parseJsonField, peopleOf } from './forms.ts';
import { CsrfField, IdText, OrgParams, PAGE, RecordParams, type PageContext, type Pages } from './pages.tsx';
import { type LivePages, versionOf } from './live.ts';
import { diffStates } from './state-diff.ts';
import { StateDiffPage } from './views/state-diff.tsx';
import { renderFragment } from './views/layout.tsx';
import { type RecentRun, type StackForm, StackPage, type StackPageProps, StackRuns, StacksPage, type StackTyped, type StackView } from './views/stacks.tsx';

const stackPath = (ctx: PageContext, id: string) => `${ctx.orgPath}/stacks/${encodeURIComponent(id)}`;
const apiStack = (id: string) => `/stacks/${encodeURIComponent(id)}`;

/** The runs a stack's page lists, newest first. */
const RECENT_RUNS = 10;

const recentRunsOf = (ctx: PageContext, id: string): Promise<{ data: RecentRun[] }> =>
  ctx.api.get('/pipeline-runs', { stackId: id, order: 'desc', limit: RECENT_RUNS });

/** What the recent runs show changes exactly when one of these does. */
const recentRunsVersion = (runs: RecentRun[]) => versionOf(runs.map((r) => [r.id, r.status, r.updatedAt]));

export function consoleStackRoutes(app: App, pages: Pages, live: LivePages) {
  const send = (reply: FastifyReply, ctx: PageContext, title: string, body: ComponentChildren, status = 200) =>
    pages.html(reply.status(status), title, ctx.viewer, body);

  async function stacksPage(ctx: PageContext, query: { environmentId?: string; cursor?: string }, error?: FormError) {
    const [stacks, environments, codeSources] = await Promise.all([
      ctx.api.get('/stacks', { environmentId: query.environmentId, cursor: query.cursor, limit: 50 }),
      environmentChoices(ctx.api),
      ctx.api.get('/code-sources', { limit: CHOICES }),
    ]);
    return (
      <StacksPage
        orgPath={ctx.orgPath}
        stacks={stacks.data}
        environments={environments}
        codeSources={codeSources.data}
        filter={{ environmentId: query.environmentId }}
        nextCursor={stacks.meta.nextCursor}
        canWrite={hasPermission(ctx.me.role as Role, 'stack:write')}
        csrfToken={ctx.viewer.csrfToken}
        formError={error}
      />
    );
  }

  app.get(
    '/orgs/:org/stacks',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: OrgParams,
        querystring: Type.Object({
          environmentId: Type.Optional(Type.Union([IdText, Type.Literal('')])),
          cursor: Type.Optional(Type.String({ maxLength: 512 })),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const query = { environmentId: request.query.environmentId || undefined, cursor: request.query.cursor };
      return send(reply, ctx, 'Stacks', await stacksPage(ctx, query));
    },
  );

  app.post(
    '/orgs/:org/stacks',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: OrgParams,
        body: Type.Object({
          _csrf: CsrfField,
          name: Type.String({ maxLength: 255 }),
          environmentId: IdText,
          codeSourceId: Type.Optional(Type.Union([IdText, Type.Literal('')])),
          ref: Type.Optional(Type.String({ maxLength: 255 })),
          path: Type.Optional(Type.String({ maxLength: 1024 })),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { name, environmentId, codeSourceId, ref, path } = request.body;
      return answerForm(
        async () => {
          const environment = (await ctx.api.get(`/environments/${encodeURIComponent(environmentId)}`)).data;
          const source = codeSourceId
            ? { codeSourceId, ...(ref?.trim() ? { ref: ref.trim() } : {}), ...(path?.trim() ? { path: path.trim() } : {}) }
            : undefined;
          const stack = (
            await ctx.api.post('/stacks', { data: { name: name.trim(), projectId: environment.projectId, environmentId, ...(source ? { source } : {}) } })
          ).data;
          return reply.redirect(stackPath(ctx, stack.id), 303);
        },
        async (failure, status) => send(reply, ctx, 'Stacks', await stacksPage(ctx, {}, failure), status),
      );
    },
  );

  async function stackPage(ctx: PageContext, id: string, failure?: StackPageProps['formError'], typed?: StackTyped) {
    const stack: StackView = (await ctx.api.get(apiStack(id))).data;
    const role = ctx.me.role as Role;
    // State holds secrets: the console lists its versions to ADMIN and above only.
    const readsState = roleAtLeast(role, 'ADMIN');
    // The settings' code form is offered where the API would take it: a writer's stack no module instance owns.
    const changesCode = hasPermission(role, 'stack:write') && !stack.moduleInstanceId;
    const [environments, sensitive, runs, versions, codeSources, people] = await Promise.all([
      environmentChoices(ctx.api),
      ctx.api.get(`${apiStack(id)}/sensitive-variables`),
      recentRunsOf(ctx, id),
      readsState ? ctx.api.get(`${apiStack(id)}/state-versions`, { limit: 200, order: 'desc' }) : undefined,
      changesCode ? ctx.api.get('/code-sources', { limit: CHOICES }) : undefined,
      readsState ? peopleOf(ctx.api) : undefined,
    ]);
    return (
      <StackPage
        orgPath={ctx.orgPath}
        stack={stack}
        environment={environments.find((e) => e.id === stack.environmentId)}
        sensitiveNames={sensitive.data.map((v: { name: string }) => v.name)}
        runs={runs.data}
        liveUrl={`${stackPath(ctx, stack.id)}/live?v=${recentRunsVersion(runs.data)}`}
        stateVersions={versions?.data}
        people={people ?? {}}
        codeSources={codeSources?.data}
        canOperate={hasPermission(role, 'run:operate')}
        canWrite={hasPermission(role, 'stack:write')}
        csrfToken={ctx.viewer.csrfToken}
        formError={failure}
        typed={typed}
      />
    );
  }

  app.get('/orgs/:org/stacks/:id', { ...PAGE, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    return send(reply, ctx, 'Stack', await stackPage(ctx, request.params.id));
  });

  // The stack page's event stream: its recent runs whenever a run comes or changes. It never finishes.
  live.recordStream('stacks', 'runs', (ctx, id) => async () => {
    // The stack is read too: once it is deleted, the stream ends rather than showing no runs.
    const [, { data: runs }] = await Promise.all([ctx.api.get(apiStack(id)), recentRunsOf(ctx, id)]);
    return { version: recentRunsVersion(runs), render: async () => renderFragment(<StackRuns orgPath={ctx.orgPath} runs={runs} />), finished: false };
  });

  /** A stack form's POST: `act` calls the API; on a refusal the page comes back with the message by that form. */
  const stackForm = <B,>(
    suffix: string,
    form: StackForm,
    body: ReturnType<typeof Type.Object>,
    act: (ctx: PageContext, params: { id: string; name?: string }, body: B) => Promise<string | undefined>,
    keep?: (body: B) => StackTyped,
  ) =>
    app.post(
      `/orgs/:org/stacks/:id${suffix}`,
      { ...PAGE, schema: { hide: true, params: Type.Object({ ...RecordParams.properties, name: Type.Optional(VariableName) }), body } },
      async (request, reply) => {
        const params = request.params as { org: string; id: string; name?: string };
        const ctx = await pages.context(request, params.org);
        return answerForm(
          async () => reply.redirect((await act(ctx, params, request.body as B)) ?? stackPath(ctx, params.id), 303),
          async (failure, status) => send(reply, ctx, 'Stack', await stackPage(ctx, params.id, { form, ...failure }, keep?.(request.body as B)), status),
        );
      },
    );

  stackForm<{ action: string; description?: string }>(
    '/runs',
    'run',
    Type.Object({
      _csrf: CsrfField,
      action: Type.Union([Type.Literal('apply'), Type.Literal('plan'), Type.Literal('destroy')]),
      description: Type.Optional(Type.String({ maxLength: 1000 })),
    }),
    async (ctx, { id }, { action, description }) => {
      const data = { action, ...(description?.trim() ? { description: description.trim() } : {}) };
      const run = (await ctx.api.post(`${apiStack(id)}/pipeline-run`, { data })).data;
      return `${ctx.orgPath}/runs/${encodeURIComponent(run.id)}`;
    },
  );

  stackForm<{ variables: string }>(
    '/variables',
    'variables',
    Type.Object({ _csrf: CsrfField, variables: Type.String({ maxLength: 64 * 1024 }) }),
    async (ctx, { id }, { variables }) => {
      const parsed = parseJsonField(variables || '{}', 'variables', true);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new ApiCallError(400, 'Api:Request:INVALID', 'The variables must be a JSON object: { "name": value, … }');
      }
      await ctx.api.patch(apiStack(id), { data: { variables: parsed } });
      return undefined;
    },
    (body) => ({ variables: body.variables }),
  );

  stackForm<{ name: string; value: string }>(
    '/sensitive-variables',
    'sensitive',
    Type.Object({ _csrf: CsrfField, name: VariableName, value: Type.String({ maxLength: 64 * 1024 }) }),
    async (ctx, { id }, { name, value }) => {
      await ctx.api.put(`${apiStack(id)}/sensitive-variables/${encodeURIComponent(name)}`, { data: { value } });
      return undefined;
    },
  );

  stackForm<object>('/sensitive-variables/:name/delete', 'sensitive', Type.Object({ _csrf: CsrfField }), async (ctx, { id, name }) => {
    await ctx.api.delete(`${apiStack(id)}/sensitive-variables/${encodeURIComponent(name ?? '')}`);
    return undefined;
  });

  stackForm<{ name: string }>(
    '/rename',
    'rename',
    Type.Object({ _csrf: CsrfField, name: Type.String({ maxLength: 255 }) }),
    async (ctx, { id }, { name }) => {
      await ctx.api.patch(apiStack(id), { data: { name: name.trim() } });
      return undefined;
    },
    (body) => ({ name: body.name }),
  );

  type CodeBody = { codeSourceId: string; ref?: string; path?: string; onPush: (typeof PUSH_ACTIONS)[number] };
  stackForm<CodeBody>(
    '/code',
    'code',
    Type.Object({
      _csrf: CsrfField,
      codeSourceId: Type.Union([IdText, Type.Literal('')]),
      ref: Type.Optional(Type.String({ maxLength: 255 })),
      path: Type.Optional(Type.String({ maxLength: 1024 })),
      onPush: Type.Union(PUSH_ACTIONS.map((a) => Type.Literal(a))),
    }),
    async (ctx, { id }, { codeSourceId, ref, path, onPush }) => {
      // The form shows every field of the source, so each is sent, and null clears one: an empty branch
      // or directory means the source's default branch or its root, and no code source means none.
      const source = codeSourceId
        ? { codeSourceId, ref: ref?.trim() || null, path: path?.trim() || null, onPush }
        : { codeSourceId: null, ref: null, path: null, onPush: null };
      await ctx.api.patch(apiStack(id), { data: { source } });
      return undefined;
    },
    ({ codeSourceId, ref, path, onPush }) => ({ codeSourceId, ref, path, onPush }),
  );

  // The API deletes what it is asked to: the typed name is the console's own check that the reader meant this one.
  stackForm<{ confirm: string }>(
    '/delete',
    'delete',
    Type.Object({ _csrf: CsrfField, confirm: Type.String({ maxLength: 255 }) }),
    async (ctx, { id }, { confirm }) => {
      const stack = (await ctx.api.get(apiStack(id))).data;
      confirmTyped(confirm, stack.name, `the stack ${stack.name}`);
      await ctx.api.delete(apiStack(id));
      return `${ctx.orgPath}/stacks`;
    },
    (body) => ({ confirm: body.confirm }),
  );

  app.get(
    '/orgs/:org/stacks/:id/state-diff',
    { ...PAGE, schema: { hide: true, params: RecordParams, querystring: Type.Object({ from: IdText, to: IdText }) } },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      if (!roleAtLeast(ctx.me.role as Role, 'ADMIN')) {
        throw new ForbiddenError('Comparing state versions needs the ADMIN role or higher: state holds secrets', 'Auth:Permission:DENIED');
      }
      const id = request.params.id;
      const version = (versionId: string) => ctx.api.get(`${apiStack(id)}/state-versions/${encodeURIComponent(versionId)}`);
      const [stack, from, to] = await Promise.all([ctx.api.get(apiStack(id)), version(request.query.from), version(request.query.to)]);
      return send(
        reply,
        ctx,
        `State of ${stack.data.name}`,
        <StateDiffPage
          stackId={id}
          stackUrl={stackPath(ctx, id)}
          stackName={stack.data.name}
          from={from.data}
          to={to.data}
          diffs={diffStates(from.data.state, to.data.state)}
        />,
      );
    },
  );
}
