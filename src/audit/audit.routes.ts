import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Body, Envelope, ListEnvelope, PaginationQuery } from '../platform/schema.ts';
import { AuditDelivery, AuditEvent, AuditEventListQuery, AuditExportQuery, AuditSettings, AuditSettingsPatch, AuditVerification } from './audit.schema.ts';
import { exportAuditEvents, getAuditSettings, listAuditDeliveries, listAuditEvents, updateAuditSettings, verifyAuditChain } from './audit.service.ts';

export async function auditRoutes(app: App) {
  const tags = ['audit'];

  app.get(
    '/audit-events',
    {
      config: { permission: 'audit:read' },
      schema: {
        tags,
        summary: "The organization's audit log, newest first (ADMIN+)",
        description:
          'One row per request that changed something, was refused, or read sensitive data: actor, key, action, resource, outcome, request id, IP, user agent and the allowlisted fields of its body, each chained to the previous by hash.',
        querystring: AuditEventListQuery,
        response: { 200: ListEnvelope(AuditEvent) },
      },
    },
    async (request) => {
      const { cursor: _cursor, limit: _limit, ...filters } = request.query;
      const { items, meta } = await listAuditEvents(app.db, request.principal, filters, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/audit-events/export',
    {
      config: { permission: 'audit:read', audit: 'audit.export' },
      schema: {
        tags,
        operationId: 'exportAuditEvents',
        summary: 'Every matching audit row as NDJSON, newest first (ADMIN+; the export is itself audited)',
        querystring: AuditExportQuery,
        response: { 200: { description: 'One AuditEvent per line', content: { 'application/x-ndjson': { schema: Type.String() } } } },
      },
    },
    async (request, reply) => {
      // A stream is sent as it is read (with backpressure), not serialized against the schema.
      const lines: unknown = Readable.from(exportAuditEvents(app.db, request.principal, request.query));
      return reply.type('application/x-ndjson').send(lines as string);
    },
  );

  app.get(
    '/audit-events/verify',
    {
      config: { permission: 'audit:read' },
      schema: {
        tags,
        operationId: 'verifyAuditChain',
        summary: "Recompute the organization's hash chain against its anchor: shows an edited, removed or reordered row, and a removed start or end (ADMIN+)",
        response: { 200: Envelope(AuditVerification) },
      },
    },
    async (request) => ({ data: await verifyAuditChain(app.db, app.secrets, request.principal.organizationId) }),
  );

  app.get(
    '/audit-settings',
    {
      config: { permission: 'audit:read' },
      schema: {
        tags,
        operationId: 'getAuditSettings',
        summary: 'Audit retention and webhook delivery of the organization (ADMIN+)',
        response: { 200: Envelope(AuditSettings) },
      },
    },
    async (request) => ({ data: await getAuditSettings(app.db, request.principal) }),
  );

  app.patch(
    '/audit-settings',
    {
      config: { permission: 'organization:manage', auditFields: ['retentionDays', 'webhookUrl:origin'] },
      schema: {
        tags,
        operationId: 'updateAuditSettings',
        summary: 'Change audit retention (days, default 365) and the webhook audit rows are delivered to (OWNER)',
        body: Body(AuditSettingsPatch),
        response: { 200: Envelope(AuditSettings) },
      },
    },
    async (request) => ({ data: await updateAuditSettings(app.db, app.secrets, request.principal, request.body.data) }),
  );

  app.get(
    '/audit-webhook-deliveries',
    {
      config: { permission: 'audit:read' },
      schema: {
        tags,
        summary: 'The delivery log of the audit webhook, newest first (ADMIN+)',
        querystring: PaginationQuery,
        response: { 200: ListEnvelope(AuditDelivery) },
      },
    },
    async (request) => {
      const { items, meta } = await listAuditDeliveries(app.db, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );
}
