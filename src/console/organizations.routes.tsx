// The console's organizations page: switch between the reader's organizations, create one, and rename
// this one (its OWNERs).

import { Type } from '@sinclair/typebox';
import { hasPermission, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { answerForm, CHOICES } from './forms.ts';
import { CsrfField, OrgParams, PAGE, type PageContext, type Pages } from './pages.tsx';
import { OrganizationsPage, type OrganizationsPageProps } from './views/organizations.tsx';

const OrganizationForm = Type.Object({ _csrf: CsrfField, name: Type.String({ maxLength: 255 }), billingEmail: Type.String({ maxLength: 254 }) });

export function consoleOrganizationRoutes(app: App, pages: Pages) {
  async function organizationsPage(ctx: PageContext, failure?: OrganizationsPageProps['formError']) {
    const [current, organizations] = await Promise.all([
      ctx.api.get(`/organizations/${encodeURIComponent(ctx.me.organizationId)}`),
      ctx.api.get('/organizations', { limit: CHOICES }),
    ]);
    return (
      <OrganizationsPage
        orgPath={ctx.orgPath}
        current={current.data}
        organizations={organizations.data}
        canEdit={hasPermission(ctx.me.role as Role, 'organization:manage')}
        canCreate={ctx.me.principalType === 'MEMBERSHIP'}
        csrfToken={ctx.viewer.csrfToken}
        formError={failure}
      />
    );
  }

  app.get('/orgs/:org/organization', { ...PAGE, schema: { hide: true, params: OrgParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    return pages.html(reply, 'Organizations', ctx.viewer, await organizationsPage(ctx));
  });

  /** Renaming this organization (`edit`) or creating one (`create`): the page again, or the new one's inbox. */
  const organizationForm = (path: string, form: 'edit' | 'create') =>
    app.post(`/orgs/:org${path}`, { ...PAGE, schema: { hide: true, params: OrgParams, body: OrganizationForm } }, async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const data = { name: request.body.name.trim(), billingEmail: request.body.billingEmail.trim() };
      return answerForm(
        async () => {
          if (form === 'create') {
            const created = (await ctx.api.post('/organizations', { data })).data;
            return reply.redirect(`/orgs/${encodeURIComponent(created.id)}/runs`, 303);
          }
          await ctx.api.patch(`/organizations/${encodeURIComponent(ctx.me.organizationId)}`, { data });
          return reply.redirect(`${ctx.orgPath}/organization`, 303);
        },
        async (failure, status) => pages.html(reply.status(status), 'Organizations', ctx.viewer, await organizationsPage(ctx, { form, ...failure })),
      );
    });
  organizationForm('/organization', 'edit');
  organizationForm('/organizations', 'create');
}
