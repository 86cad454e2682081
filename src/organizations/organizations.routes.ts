import { createOrganizationExample, organizationExample } from './organizations.examples.ts';
import { Envelope, Example, IdParams, ListEnvelope, OrderedPaginationQuery } from '../platform/schema.ts';
import { pageRequest } from '../platform/pagination.ts';
import type { App } from '../platform/http/app.ts';
import { CreateOrganization, Organization, UpdateOrganization } from './organizations.schema.ts';
import { createOrganization, getOrganization, listOrganizations, updateOrganization } from './organizations.service.ts';

export async function organizationRoutes(app: App) {
  const tags = ['organizations'];

  app.post(
    '/organizations',
    {
      config: { permission: 'authenticated', auditFields: ['name', 'billingEmail'] },
      schema: {
        tags,
        summary: 'Create an organization; the caller becomes its OWNER',
        body: Example(CreateOrganization, createOrganizationExample),
        response: { 201: Example(Envelope(Organization), { data: organizationExample }) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createOrganization(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/organizations',
    {
      config: { permission: 'authenticated' },
      schema: { tags, summary: "List the caller's organizations", querystring: OrderedPaginationQuery, response: { 200: ListEnvelope(Organization) } },
    },
    async (request) => {
      const { items, meta } = await listOrganizations(app.db, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/organizations/:id',
    {
      config: { permission: 'authenticated' },
      schema: { tags, summary: 'Read an organization the caller belongs to', params: IdParams, response: { 200: Envelope(Organization) } },
    },
    async (request) => ({ data: await getOrganization(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/organizations/:id',
    {
      config: { permission: 'authenticated', auditFields: ['name', 'billingEmail'] },
      schema: { tags, summary: 'Update an organization (OWNER)', params: IdParams, body: UpdateOrganization, response: { 200: Envelope(Organization) } },
    },
    async (request) => ({ data: await updateOrganization(app.db, request.principal, request.params.id, request.body.data) }),
  );
}
