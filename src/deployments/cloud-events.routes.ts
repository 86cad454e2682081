import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { CloudAccountRow } from '../cloud-accounts/cloud-accounts.repo.ts';
import { cloudAccountOfEvents } from '../cloud-accounts/cloud-accounts.service.ts';
import { INGEST_SECRET_HEADER } from '../cloud-accounts/ingest-secrets.ts';
import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import { metrics } from '../platform/metrics/metrics.ts';
import { CLOUD_EVENT_OUTCOMES } from '../platform/db/enums.ts';
import { Envelope, IdParams, StringEnum } from '../platform/schema.ts';
import { ingestCloudEvent } from './ingest.service.ts';
import { isoTime, type CloudEvent } from './ecs-events.ts';
import { BadRequestError } from '../platform/errors.ts';

const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** EventBridge's largest event. */
const EVENT_BODY_LIMIT = 256 * 1024;

const Text = Type.String({ minLength: 1, maxLength: 1024 });

/** An EventBridge event as an API destination sends it (what AWS adds beyond these fields is kept, unread). */
const EventBridgeEvent = Type.Object(
  {
    version: Type.Optional(Type.String({ maxLength: 64 })),
    id: Text,
    'detail-type': Text,
    source: Text,
    account: Text,
    time: Type.String({ format: 'date-time', maxLength: 64, description: 'ISO 8601, as AWS writes it' }),
    region: Text,
    resources: Type.Optional(Type.Array(Type.String({ maxLength: 2048 }), { maxItems: 100 })),
    detail: Type.Object({}, { additionalProperties: true }),
  },
  { additionalProperties: true },
);

const IngestResult = Type.Object({
  id: Type.String({ description: "Plinth's id of the stored event" }),
  eventId: Type.String({ description: "EventBridge's id of the event" }),
  outcome: StringEnum(CLOUD_EVENT_OUTCOMES, {
    description: 'APPLIED; STALE: older than what its resource shows; UNMATCHED: of no module instance; UNKNOWN: a kind Plinth does not read',
  }),
  duplicate: Type.Boolean({ description: 'The event was received before: nothing was done again' }),
  deploymentId: Type.Optional(Type.String()),
});

/** The account each request authenticated as, from its headers, before its body is read. */
const accountOf = new WeakMap<FastifyRequest, CloudAccountRow>();

/** Events from Amazon EventBridge, through an API destination (docs/deployments.md#events). */
export async function cloudEventRoutes(app: App) {
  app.post(
    '/cloud-accounts/:id/events',
    {
      config: { public: true },
      bodyLimit: EVENT_BODY_LIMIT,
      // The secret is checked before the body is read: a caller without it costs a lookup, not a parse.
      onRequest: async (request) => {
        const secret = request.headers[INGEST_SECRET_HEADER];
        // Checked here, before the path's own validation runs: nothing else reaches the lookup.
        const id = (request.params as { id?: string }).id ?? '';
        try {
          accountOf.set(
            request,
            await cloudAccountOfEvents(app.db, app.credentials, ID_PATTERN.test(id) ? id : '', typeof secret === 'string' ? secret : undefined),
          );
        } catch (error) {
          metrics.inboundEvents.inc({ source: 'aws', type: 'event', result: 'unverified' });
          throw error;
        }
      },
      schema: {
        tags: ['deployments'],
        operationId: 'receiveCloudEvent',
        summary: "Receive an Amazon EventBridge event of the cloud account (no credential: the account's ingest secret in X-Plinth-Ingest-Secret)",
        description:
          'Each event is stored once by its id: a redelivery is a 200 that does nothing again. ECS task, service deployment and service action events are ' +
          "applied in the resource's own order; any other event, or one about a service no module instance declares, is stored and answered 202.",
        params: IdParams,
        body: EventBridgeEvent,
        response: {
          ...errorResponses({ 401: 'No ingest secret, or not the secret of this cloud account (an unknown account included)', 404: false }),
          200: Envelope(IngestResult),
          202: Envelope(IngestResult),
        },
      },
    },
    async (request, reply) => {
      const account = accountOf.get(request)!;
      const event = request.body as CloudEvent;
      const time = isoTime(event.time);
      if (!time) throw new BadRequestError('time is not a time AWS writes', [`time: "${event.time}" is not an ISO 8601 time between 1970 and 9999`]);
      const result = await ingestCloudEvent(app.db, app.config.domains, account, { ...event, time });
      metrics.inboundEvents.inc({ source: 'aws', type: 'event', result: 'accepted' });
      const acknowledgedOnly = !result.duplicate && (result.outcome === 'UNMATCHED' || result.outcome === 'UNKNOWN');
      return reply.status(acknowledgedOnly ? 202 : 200).send({ data: result });
    },
  );
}
