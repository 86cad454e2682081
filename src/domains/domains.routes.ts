import { Type } from '@sinclair/typebox';
import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';

import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import { AttachDomain, Domain, DomainEvent, DomainEventsQuery, DomainListQuery } from './domains.schema.ts';
import { attachDomain, detachDomain, domainEvents, getDomain, listDomains, verifyDomainNow } from './domains.service.ts';

/** Domains of module instances, their DNS verification and certificates, and their events (docs/domains.md). */
export async function domainRoutes(app: App) {
  const tags = ['domains'];
  const deps = () => ({ db: app.db, aws: app.config.aws, domains: app.config.domains });

  app.post(
    '/domains',
    {
      config: { permission: 'module:write', auditFields: ['moduleInstanceId', 'hostname', 'cloudAccountId', 'region'] },
      schema: {
        tags,
        summary: 'Attach a hostname to a module instance: create the TXT record the answer names, and a certificate is requested once it is there',
        body: AttachDomain,
        response: {
          ...errorResponses({
            409: 'The hostname is attached already in the organization',
            422: 'Not a hostname a certificate can name, or no region given nor found in the instance',
          }),
          201: Envelope(Domain),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await attachDomain(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/domains',
    { schema: { tags, summary: "List the organization's domains (attached ones)", querystring: DomainListQuery, response: { 200: ListEnvelope(Domain) } } },
    async (request) => {
      const { items, meta } = await listDomains(app.db, request.principal, pageRequest(request.query), request.query.moduleInstanceId);
      return { data: items, meta };
    },
  );

  app.get(
    '/domains/events',
    {
      schema: {
        tags,
        operationId: 'listDomainEvents',
        summary: "A module instance's most recent domain and certificate events, oldest first",
        querystring: DomainEventsQuery,
        response: { ...errorResponses({ 404: 'No module instance of the organization has this id' }), 200: Type.Object({ data: Type.Array(DomainEvent) }) },
      },
    },
    async (request) => ({ data: await domainEvents(app.db, request.principal, request.query) }),
  );

  app.get(
    '/domains/:id',
    { schema: { tags, summary: 'Read a domain, with its verification record and its certificate', params: IdParams, response: { 200: Envelope(Domain) } } },
    async (request) => ({ data: await getDomain(app.db, request.principal, request.params.id) }),
  );

  app.post(
    '/domains/:id/verify',
    {
      config: { permission: 'module:write', audit: 'domain.verify' },
      schema: {
        tags,
        summary: 'Look for the TXT record now (and, found, request the certificate) rather than at the next check',
        params: IdParams,
        response: { 200: Envelope(Domain) },
      },
    },
    async (request) => ({ data: await verifyDomainNow(deps(), request.principal, request.params.id) }),
  );

  app.delete(
    '/domains/:id',
    {
      config: { permission: 'module:write' },
      schema: { tags, summary: 'Detach a domain (its events stay; its certificate stays in ACM)', params: IdParams, response: { 204: NoContent } },
    },
    async (request, reply) => {
      await detachDomain(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
