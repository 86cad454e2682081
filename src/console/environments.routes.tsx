// The console's projects and environments page: its forms for new ones, and to rename and delete each
// (a deletion asks for the record's id, typed).

import { type TString, Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { hasPermission, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { answerForm, CHOICES, confirmTyped, projectChoices } from './forms.ts';
import { CsrfField, IdText, OrgParams, PAGE, RecordParams, type PageContext, type Pages } from './pages.tsx';
import { EnvironmentsPage, type EnvironmentsPageProps } from './views/environments.tsx';

type Refused = Pick<EnvironmentsPageProps, 'formError' | 'typed'>;

export function consoleEnvironmentRoutes(app: App, pages: Pages) {
  async function environmentsPage(ctx: PageContext, refused: Refused = {}) {
    const [projects, environments] = await Promise.all([projectChoices(ctx.api), ctx.api.get('/environments', { limit: CHOICES })]);
    const role = ctx.me.role as Role;
    return (
      <EnvironmentsPage
        orgPath={ctx.orgPath}
        projects={projects}
        environments={environments.data}
        canWriteProjects={hasPermission(role, 'project:write')}
        canWriteEnvironments={hasPermission(role, 'environment:write')}
        csrfToken={ctx.viewer.csrfToken}
        {...refused}
      />
    );
  }

  const send = async (reply: FastifyReply, ctx: PageContext, status = 200, refused: Refused = {}) =>
    pages.html(reply.status(status), 'Projects and environments', ctx.viewer, await environmentsPage(ctx, refused));

  app.get('/orgs/:org/environments', { ...PAGE, schema: { hide: true, params: OrgParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    return send(reply, ctx);
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
        (failure, status) => send(reply, ctx, status, { formError: { form, ...failure } }),
      );
    });

  createForm('/projects', 'project', Type.Object(Named), ['name', 'givenId']);
  createForm('/environments', 'environment', Type.Object({ ...Named, projectId: IdText }), ['name', 'givenId', 'projectId']);

  /** A form on one project or environment: `act` calls the API, then the page comes back (with a refusal by that record's forms). */
  const recordForm = <B,>(
    collection: 'projects' | 'environments',
    form: 'rename' | 'delete',
    fields: Record<string, TString>,
    act: (ctx: PageContext, id: string, body: B) => Promise<void>,
  ) =>
    app.post(
      `/orgs/:org/${collection}/:id/${form}`,
      { ...PAGE, schema: { hide: true, params: RecordParams, body: Type.Object({ _csrf: CsrfField, ...fields }) } },
      async (request, reply) => {
        const { org, id } = request.params as { org: string; id: string };
        const ctx = await pages.context(request, org);
        return answerForm(
          async () => {
            await act(ctx, id, request.body as B);
            return reply.redirect(`${ctx.orgPath}/environments`, 303);
          },
          (failure, status) => send(reply, ctx, status, { formError: { form, recordId: id, ...failure }, typed: request.body as Refused['typed'] }),
        );
      },
    );

  for (const [collection, kind] of [
    ['projects', 'project'],
    ['environments', 'environment'],
  ] as const) {
    const apiPath = (id: string) => `/${collection}/${encodeURIComponent(id)}`;
    recordForm<{ name: string }>(collection, 'rename', { name: Type.String({ maxLength: 255 }) }, async (ctx, id, { name }) => {
      await ctx.api.patch(apiPath(id), { data: { name: name.trim() } });
    });
    // The API deletes what it is asked to: the typed id is the console's own check that the reader meant this one.
    recordForm<{ confirm: string }>(collection, 'delete', { confirm: Type.String({ maxLength: 255 }) }, async (ctx, id, { confirm }) => {
      const record = (await ctx.api.get(apiPath(id))).data;
      confirmTyped(confirm, record.givenId, `the ${kind} ${record.name}`);
      await ctx.api.delete(apiPath(id));
    });
  }
}
