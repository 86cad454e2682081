// The console's projects and environments page, and its two forms.

import { Type } from '@sinclair/typebox';
import { hasPermission, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { answerForm, CHOICES, projectChoices } from './forms.ts';
import { CsrfField, IdText, OrgParams, PAGE, type PageContext, type Pages } from './pages.tsx';
import { EnvironmentsPage, type EnvironmentsPageProps } from './views/environments.tsx';

export function consoleEnvironmentRoutes(app: App, pages: Pages) {
  async function environmentsPage(ctx: PageContext, failure?: EnvironmentsPageProps['formError']) {
    const [projects, environments] = await Promise.all([projectChoices(ctx.api), ctx.api.get('/environments', { limit: CHOICES })]);
    const role = ctx.me.role as Role;
    return (
      <EnvironmentsPage
        orgPath={ctx.orgPath}
        projects={projects}
        environments={environments.data}
        canWrite={hasPermission(role, 'project:write') && hasPermission(role, 'environment:write')}
        csrfToken={ctx.viewer.csrfToken}
        formError={failure}
      />
    );
  }

  app.get('/orgs/:org/environments', { ...PAGE, schema: { hide: true, params: OrgParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    return pages.html(reply, 'Projects and environments', ctx.viewer, await environmentsPage(ctx));
  });

  const Named = { _csrf: CsrfField, name: Type.String({ maxLength: 255 }), givenId: Type.String({ maxLength: 60 }) };

  /** A form that creates a record through the API, then shows the page again (with the API's refusal, if any). */
  const createForm = (path: string, form: 'project' | 'environment', body: ReturnType<typeof Type.Object>, fields: string[]) =>
    app.post(`/orgs/:org${path}`, { ...PAGE, schema: { hide: true, params: OrgParams, body } }, async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const posted = request.body as Record<string, string | undefined>;
      // Only the form's own fields go to the API, whatever else was posted.
      const data = Object.fromEntries(fields.map((field) => [field, posted[field]?.trim() ?? '']));
      return answerForm(
        async () => {
          await ctx.api.post(path, { data });
          return reply.redirect(`${ctx.orgPath}/environments`, 303);
        },
        async (failure, status) => pages.html(reply.status(status), 'Projects and environments', ctx.viewer, await environmentsPage(ctx, { form, ...failure })),
      );
    });

  createForm('/projects', 'project', Type.Object(Named), ['name', 'givenId']);
  createForm('/environments', 'environment', Type.Object({ ...Named, projectId: IdText }), ['name', 'givenId', 'projectId']);
}
