// The console's code sources page (and the self-hosted Git servers), and an environment's resolved
// default values with the values set on its scopes, to set, change and remove.

import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { hasPermission, roleAtLeast, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { GIT_PROVIDERS } from '../platform/db/enums.ts';
import { answerForm, CHOICES, confirmTyped, parseJsonField } from './forms.ts';
import { CsrfField, IdText, OrgParams, PAGE, RecordParams, type PageContext, type Pages } from './pages.tsx';
import {
  CodeSourcesPage,
  type CodeSourcesPageProps,
  DEFAULT_SCOPES,
  type GitServerFields,
  type DefaultScope,
  DefaultValuesPage,
  type DefaultValuesPageProps,
} from './views/sources.tsx';

/** A refused default value's form: its message, and what it held. */
type Refused = Pick<DefaultValuesPageProps, 'formError' | 'typed'>;

export function consoleSourceRoutes(app: App, pages: Pages) {
  async function sourcesPage(ctx: PageContext, refused: Pick<CodeSourcesPageProps, 'formError' | 'typed'> = {}) {
    const manage = roleAtLeast(ctx.me.role as Role, 'ADMIN');
    const [sources, servers] = await Promise.all([
      ctx.api.get('/code-sources', { limit: CHOICES }),
      ctx.api.get('/git-self-hosted-servers', { limit: CHOICES }),
    ]);
    return (
      <CodeSourcesPage orgPath={ctx.orgPath} sources={sources.data} servers={servers.data} canManage={manage} csrfToken={ctx.viewer.csrfToken} {...refused} />
    );
  }

  const sendSources = async (reply: FastifyReply, ctx: PageContext, status: number, refused: Pick<CodeSourcesPageProps, 'formError' | 'typed'>) =>
    pages.html(reply.status(status), 'Code sources', ctx.viewer, await sourcesPage(ctx, refused));

  app.get('/orgs/:org/code-sources', { ...PAGE, schema: { hide: true, params: OrgParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    return pages.html(reply, 'Code sources', ctx.viewer, await sourcesPage(ctx));
  });

  // The token goes to the API, which seals it; it is never rendered, not even on a refused form.
  app.post(
    '/orgs/:org/code-sources',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: OrgParams,
        body: Type.Object({
          _csrf: CsrfField,
          name: Type.String({ maxLength: 255 }),
          url: Type.String({ maxLength: 2048 }),
          token: Type.Optional(Type.String({ maxLength: 4096 })),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { name, url, token } = request.body;
      const data = { name: name.trim(), url: url.trim(), ...(token ? { authType: 'TOKEN', token } : {}) };
      return answerForm(
        async () => {
          await ctx.api.post('/code-sources', { data });
          return reply.redirect(`${ctx.orgPath}/code-sources`, 303);
        },
        (failure, status) => sendSources(reply, ctx, status, { formError: { form: 'source', ...failure } }),
      );
    },
  );

  // As a code source's token: the client secret goes to the API, which seals it, and is never rendered, not even on a refused form.
  app.post(
    '/orgs/:org/code-sources/git-servers',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: OrgParams,
        body: Type.Object({
          _csrf: CsrfField,
          name: Type.String({ maxLength: 255 }),
          provider: Type.Union(GIT_PROVIDERS.map((p) => Type.Literal(p))),
          baseUrl: Type.String({ maxLength: 2048 }),
          clientId: Type.String({ maxLength: 512 }),
          clientSecret: Type.String({ maxLength: 4096 }),
          scopes: Type.Optional(Type.String({ maxLength: 1024 })),
          authorizeUrl: Type.Optional(Type.String({ maxLength: 2048 })),
          tokenUrl: Type.Optional(Type.String({ maxLength: 2048 })),
          userUrl: Type.Optional(Type.String({ maxLength: 2048 })),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { clientSecret, ...body } = request.body;
      const typed: GitServerFields = {
        name: body.name.trim(),
        provider: body.provider,
        baseUrl: body.baseUrl.trim(),
        clientId: body.clientId.trim(),
        scopes: body.scopes?.trim(),
        authorizeUrl: body.authorizeUrl?.trim(),
        tokenUrl: body.tokenUrl?.trim(),
        userUrl: body.userUrl?.trim(),
      };
      // An optional field left empty is left out: the API then derives the endpoint from the provider, or asks for no scope.
      const given = Object.fromEntries(Object.entries(typed).filter(([, value]) => value));
      return answerForm(
        async () => {
          await ctx.api.post('/git-self-hosted-servers', { data: { ...given, clientSecret } });
          return reply.redirect(`${ctx.orgPath}/code-sources`, 303);
        },
        (failure, status) => sendSources(reply, ctx, status, { formError: { form: 'server', ...failure }, typed }),
      );
    },
  );

  // The API deletes what it is asked to: the typed name is the console's own check that the reader meant this one.
  const deleteForm = (route: string, apiPath: string, what: string) =>
    app.post(
      `/orgs/:org/code-sources${route}/:id/delete`,
      { ...PAGE, schema: { hide: true, params: RecordParams, body: Type.Object({ _csrf: CsrfField, confirm: Type.String({ maxLength: 255 }) }) } },
      async (request, reply) => {
        const ctx = await pages.context(request, request.params.org);
        const path = `${apiPath}/${encodeURIComponent(request.params.id)}`;
        return answerForm(
          async () => {
            const record = (await ctx.api.get(path)).data;
            confirmTyped(request.body.confirm, record.name, `${what} ${record.name}`);
            await ctx.api.delete(path);
            return reply.redirect(`${ctx.orgPath}/code-sources`, 303);
          },
          (failure, status) =>
            sendSources(reply, ctx, status, {
              formError: { form: 'delete', recordId: request.params.id, ...failure },
              typed: { confirm: request.body.confirm },
            }),
        );
      },
    );
  deleteForm('', '/code-sources', 'the code source');
  deleteForm('/git-servers', '/git-self-hosted-servers', 'the Git server');

  const defaultsPath = (ctx: PageContext, environmentId: string) => `${ctx.orgPath}/environments/${encodeURIComponent(environmentId)}/defaults`;

  /** The parent each scope of the environment names in the API: itself, its project, the organization. */
  const scopeParents = (ctx: PageContext, environment: { id: string; projectId: string }): Record<DefaultScope, string> => ({
    ENVIRONMENT: environment.id,
    PROJECT: environment.projectId,
    ORGANIZATION: ctx.me.organizationId,
  });

  async function defaultsPage(ctx: PageContext, environmentId: string, refused: Refused = {}) {
    const id = encodeURIComponent(environmentId);
    const [environment, values] = await Promise.all([
      ctx.api.get(`/environments/${id}`),
      ctx.api.get(`/environments/${id}/resolved-default-values`, { limit: CHOICES }),
    ]);
    const parents = scopeParents(ctx, environment.data);
    const [project, ...scoped] = await Promise.all([
      ctx.api.get(`/projects/${encodeURIComponent(environment.data.projectId)}`),
      ...DEFAULT_SCOPES.map((scope) => ctx.api.get('/default-values', { parentId: parents[scope], limit: CHOICES })),
    ]);
    const scopeNames = {
      ENVIRONMENT: `this environment, ${environment.data.name}`,
      PROJECT: `its project, ${project.data.name}`,
      ORGANIZATION: `the organization, ${ctx.me.organizationName}`,
    };
    return {
      title: `Default values of ${environment.data.name}`,
      body: (
        <DefaultValuesPage
          orgPath={ctx.orgPath}
          environment={environment.data}
          values={values.data}
          scoped={scoped.flatMap((page) => page.data)}
          scopeNames={scopeNames}
          canWrite={hasPermission(ctx.me.role as Role, 'default-value:write')}
          csrfToken={ctx.viewer.csrfToken}
          {...refused}
        />
      ),
    };
  }

  const sendDefaults = async (reply: FastifyReply, ctx: PageContext, environmentId: string, status = 200, refused: Refused = {}) => {
    const { title, body } = await defaultsPage(ctx, environmentId, refused);
    return pages.html(reply.status(status), title, ctx.viewer, body);
  };

  app.get('/orgs/:org/environments/:id/defaults', { ...PAGE, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    return sendDefaults(reply, ctx, request.params.id);
  });

  const JsonValue = Type.String({ maxLength: 64 * 1024 });

  // One value per definition and scope: setting where one is already set changes it, as the form says.
  app.post(
    '/orgs/:org/environments/:id/defaults',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: RecordParams,
        body: Type.Object({
          _csrf: CsrfField,
          defaultValueDefinitionId: IdText,
          scope: Type.Union(DEFAULT_SCOPES.map((s) => Type.Literal(s))),
          value: JsonValue,
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { defaultValueDefinitionId, scope, value } = request.body;
      return answerForm(
        async () => {
          const parsed = parseJsonField(value, 'value');
          const environment = (await ctx.api.get(`/environments/${encodeURIComponent(request.params.id)}`)).data;
          const parentId = scopeParents(ctx, environment)[scope];
          const [current] = (await ctx.api.get('/default-values', { defaultValueDefinitionId, parentId, limit: 1 })).data;
          if (current) await ctx.api.patch(`/default-values/${encodeURIComponent(current.id)}`, { data: { value: parsed } });
          else await ctx.api.post('/default-values', { data: { defaultValueDefinitionId, parentId, value: parsed } });
          return reply.redirect(defaultsPath(ctx, request.params.id), 303);
        },
        (failure, status) =>
          sendDefaults(reply, ctx, request.params.id, status, { formError: { form: 'set', ...failure }, typed: { defaultValueDefinitionId, scope, value } }),
      );
    },
  );

  const ValueParams = Type.Object({ ...RecordParams.properties, valueId: IdText });

  app.post(
    '/orgs/:org/environments/:id/defaults/:valueId',
    { ...PAGE, schema: { hide: true, params: ValueParams, body: Type.Object({ _csrf: CsrfField, value: JsonValue }) } },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { id, valueId } = request.params;
      return answerForm(
        async () => {
          await ctx.api.patch(`/default-values/${encodeURIComponent(valueId)}`, { data: { value: parseJsonField(request.body.value, 'value') } });
          return reply.redirect(defaultsPath(ctx, id), 303);
        },
        (failure, status) => sendDefaults(reply, ctx, id, status, { formError: { form: 'value', valueId, ...failure }, typed: { value: request.body.value } }),
      );
    },
  );

  app.post(
    '/orgs/:org/environments/:id/defaults/:valueId/remove',
    { ...PAGE, schema: { hide: true, params: ValueParams, body: Type.Object({ _csrf: CsrfField }) } },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { id, valueId } = request.params;
      return answerForm(
        async () => {
          await ctx.api.delete(`/default-values/${encodeURIComponent(valueId)}`);
          return reply.redirect(defaultsPath(ctx, id), 303);
        },
        (failure, status) => sendDefaults(reply, ctx, id, status, { formError: { form: 'value', valueId, ...failure } }),
      );
    },
  );
}
