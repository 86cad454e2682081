// The console's access pages: members, service accounts and API keys (a new key's token shown once, on
// the page that answers its form, never again), and the audit log for ADMIN and above.

import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { ROLES, roleAtLeast, type Role } from '../platform/auth/roles.ts';
import { AUDIT_OUTCOMES } from '../platform/db/enums.ts';
import { ForbiddenError } from '../platform/errors.ts';
import type { App } from '../platform/http/app.ts';
import { answerForm, CHOICES } from './forms.ts';
import { CsrfField, IdText, OrgParams, PAGE, RecordParams, type PageContext, type Pages } from './pages.tsx';
import { type AccessForm, AccessPage, type AccessPageProps, AuditPage, TokenOnce } from './views/access.tsx';

const RoleField = Type.Union(ROLES.map((r) => Type.Literal(r)));

export function consoleAccessRoutes(app: App, pages: Pages) {
  const canManage = (ctx: PageContext) => roleAtLeast(ctx.me.role as Role, 'ADMIN');

  async function accessPage(ctx: PageContext, extra: Pick<AccessPageProps, 'formError' | 'created'> = {}) {
    const manage = canManage(ctx);
    const [members, accounts, keys] = await Promise.all([
      ctx.api.get('/memberships', { limit: CHOICES }),
      manage ? ctx.api.get('/service-accounts', { limit: CHOICES }) : { data: [] },
      ctx.api.get('/api-keys', { limit: CHOICES, order: 'desc' }),
    ]);
    return (
      <AccessPage
        orgPath={ctx.orgPath}
        members={members.data}
        serviceAccounts={accounts.data}
        keys={keys.data}
        viewerId={ctx.me.userId}
        canManage={manage}
        isOwner={roleAtLeast(ctx.me.role as Role, 'OWNER')}
        isSuperAdmin={ctx.me.isSuperAdmin}
        boundToOrganization={ctx.session.mintedKey}
        csrfToken={ctx.viewer.csrfToken}
        {...extra}
      />
    );
  }

  const send = async (reply: FastifyReply, ctx: PageContext, status = 200, extra: Pick<AccessPageProps, 'formError' | 'created'> = {}) =>
    pages.html(reply.status(status), 'Access', ctx.viewer, await accessPage(ctx, extra));

  app.get('/orgs/:org/access', { ...PAGE, schema: { hide: true, params: OrgParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    return send(reply, ctx);
  });

  /** A form of the access page: `act` calls the API, then the page comes back (with the refusal by its form). */
  const accessForm = <B,>(
    path: string,
    form: AccessForm,
    params: ReturnType<typeof Type.Object>,
    body: ReturnType<typeof Type.Object>,
    act: (ctx: PageContext, params: Record<string, string>, body: B) => Promise<void>,
  ) =>
    app.post(`/orgs/:org/access${path}`, { ...PAGE, schema: { hide: true, params, body } }, async (request, reply) => {
      const p = request.params as Record<string, string>;
      const ctx = await pages.context(request, p.org);
      return answerForm(
        async () => {
          await act(ctx, p, request.body as B);
          return reply.redirect(`${ctx.orgPath}/access`, 303);
        },
        (failure, status) => send(reply, ctx, status, { formError: { form, ...failure } }),
      );
    });

  accessForm<{ email: string; role: Role }>(
    '/members',
    'member',
    OrgParams,
    Type.Object({ _csrf: CsrfField, email: Type.String({ maxLength: 254 }), role: RoleField }),
    async (ctx, _params, { email, role }) => void (await ctx.api.post('/memberships', { data: { email: email.trim(), role } })),
  );
  accessForm<{ role: Role }>(
    '/members/:id/role',
    'member',
    RecordParams,
    Type.Object({ _csrf: CsrfField, role: RoleField }),
    async (ctx, { id }, { role }) => void (await ctx.api.patch(`/memberships/${encodeURIComponent(id)}`, { data: { role } })),
  );
  accessForm('/members/:id/remove', 'member', RecordParams, Type.Object({ _csrf: CsrfField }), async (ctx, { id }) => {
    await ctx.api.delete(`/memberships/${encodeURIComponent(id)}`);
  });
  accessForm<{ name: string; role: Role }>(
    '/service-accounts',
    'service-account',
    OrgParams,
    Type.Object({ _csrf: CsrfField, name: Type.String({ maxLength: 255 }), role: RoleField }),
    async (ctx, _params, { name, role }) => void (await ctx.api.post('/service-accounts', { data: { name: name.trim(), role } })),
  );
  accessForm('/keys/:id/revoke', 'key', RecordParams, Type.Object({ _csrf: CsrfField }), async (ctx, { id }) => {
    await ctx.api.delete(`/api-keys/${encodeURIComponent(id)}`);
  });

  // A new key answers with the access page itself, holding the token: no redirect, so it is never in a URL or history entry.
  app.post(
    '/orgs/:org/access/keys',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: OrgParams,
        body: Type.Object({
          _csrf: CsrfField,
          name: Type.String({ maxLength: 255 }),
          serviceAccountId: Type.Union([IdText, Type.Literal('')]),
          expiresAt: Type.Optional(Type.String({ maxLength: 40 })),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { name, serviceAccountId, expiresAt } = request.body;
      const data = {
        name: name.trim(),
        ...(serviceAccountId ? { serviceAccountId } : {}),
        ...(expiresAt?.trim() ? { expiresAt: expiresAt.trim() } : {}),
      };
      const key = await answerForm(
        async () => (await ctx.api.post('/api-keys', { data })).data,
        async (failure, status) => void (await send(reply, ctx, status, { formError: { form: 'key', ...failure } })),
      );
      if (!key) return reply;
      const created = { name: key.name, token: key.token };
      try {
        return await send(reply, ctx, 201, { created });
      } catch {
        // The key exists: its token is shown whatever else the page could not read.
        return pages.html(reply.status(201), 'Access', ctx.viewer, <TokenOnce created={created} />);
      }
    },
  );

  app.get(
    '/orgs/:org/audit',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: OrgParams,
        querystring: Type.Object({
          action: Type.Optional(Type.String({ maxLength: 200 })),
          outcome: Type.Optional(Type.Union([...AUDIT_OUTCOMES.map((o) => Type.Literal(o)), Type.Literal('')])),
          cursor: Type.Optional(Type.String({ maxLength: 512 })),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      if (!canManage(ctx)) throw new ForbiddenError('The audit log needs the ADMIN role or higher (audit:read)', 'Auth:Permission:DENIED');
      const filter = { action: request.query.action?.trim() || undefined, outcome: request.query.outcome || undefined };
      const events = await ctx.api.get('/audit-events', { ...filter, cursor: request.query.cursor, limit: 50 });
      return pages.html(
        reply,
        'Audit log',
        ctx.viewer,
        <AuditPage orgPath={ctx.orgPath} events={events.data} filter={filter} nextCursor={events.meta.nextCursor} />,
      );
    },
  );
}
