import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent, OrderedPaginationQuery } from '../platform/schema.ts';
import { UserAuthSettings, UserIdParams } from '../users/users.schema.ts';
import { InviteMember, Membership, UpdateMembership } from './memberships.schema.ts';
import { changeMembershipRole, getMembership, getUserAuthSettings, inviteMember, listMemberships, removeMembership } from './memberships.service.ts';

export async function membershipRoutes(app: App) {
  const tags = ['memberships'];

  app.post(
    '/memberships',
    {
      config: { permission: 'membership:manage', auditFields: ['email', 'role'] },
      schema: {
        tags,
        operationId: 'inviteMember',
        summary: 'Invite a user by email',
        body: InviteMember,
        response: { ...errorResponses({ 409: 'The email is already a member of the organization' }), 201: Envelope(Membership) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await inviteMember(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/memberships',
    {
      schema: { tags, summary: "List the organization's memberships", querystring: OrderedPaginationQuery, response: { 200: ListEnvelope(Membership) } },
    },
    async (request) => {
      const { items, meta } = await listMemberships(app.db, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/memberships/:id',
    {
      schema: { tags, summary: 'Read a membership', params: IdParams, response: { 200: Envelope(Membership) } },
    },
    async (request) => ({ data: await getMembership(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/memberships/:id',
    {
      config: { permission: 'membership:manage', auditFields: ['role'] },
      schema: {
        tags,
        summary: "Change a member's role",
        params: IdParams,
        body: UpdateMembership,
        response: { ...errorResponses({ 409: 'The organization would be left without an OWNER' }), 200: Envelope(Membership) },
      },
    },
    async (request) => ({ data: await changeMembershipRole(app.db, request.principal, request.params.id, request.body.data.role) }),
  );

  app.delete(
    '/memberships/:id',
    {
      config: { permission: 'membership:manage' },
      schema: {
        tags,
        summary: 'Remove a member',
        params: IdParams,
        response: { ...errorResponses({ 409: 'The organization would be left without an OWNER' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await removeMembership(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  // A users route, served here: who may read it is a membership rule (an ADMIN+ of an organization the user is in).
  app.get(
    '/users/:userId/identities',
    {
      config: { permission: 'authenticated' },
      schema: {
        tags: ['users'],
        summary: "How a user signs in (own, or ADMIN+ for the organization's members)",
        params: UserIdParams,
        response: { 200: Envelope(UserAuthSettings) },
      },
    },
    async (request) => ({ data: await getUserAuthSettings(app.db, request.principal, request.params.userId) }),
  );
}
