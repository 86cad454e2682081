// The console's code sources page (and the self-hosted Git servers), and an environment's resolved
// default values.

import { Type } from '@sinclair/typebox';
import { roleAtLeast, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { answerForm, CHOICES, type FormError } from './forms.ts';
import { CsrfField, OrgParams, PAGE, RecordParams, type PageContext, type Pages } from './pages.tsx';
import { CodeSourcesPage, DefaultValuesPage } from './views/sources.tsx';

export function consoleSourceRoutes(app: App, pages: Pages) {
  async function sourcesPage(ctx: PageContext, failure?: FormError) {
    const manage = roleAtLeast(ctx.me.role as Role, 'ADMIN');
    const [sources, servers] = await Promise.all([
      ctx.api.get('/code-sources', { limit: CHOICES }),
      ctx.api.get('/git-self-hosted-servers', { limit: CHOICES }),
    ]);
    return (
      <CodeSourcesPage
        orgPath={ctx.orgPath}
        sources={sources.data}
        servers={servers.data}
        canManage={manage}
        csrfToken={ctx.viewer.csrfToken}
        formError={failure}
      />
    );
  }

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
        async (failure, status) => pages.html(reply.status(status), 'Code sources', ctx.viewer, await sourcesPage(ctx, failure)),
      );
    },
  );

  app.get('/orgs/:org/environments/:id/defaults', { ...PAGE, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    const id = encodeURIComponent(request.params.id);
    const [environment, values] = await Promise.all([
      ctx.api.get(`/environments/${id}`),
      ctx.api.get(`/environments/${id}/resolved-default-values`, { limit: CHOICES }),
    ]);
    return pages.html(
      reply,
      `Default values of ${environment.data.name}`,
      ctx.viewer,
      <DefaultValuesPage environment={environment.data} values={values.data} />,
    );
  });
}
