import type { Executor } from '../platform/db/db.ts';
import type { CloudEventOutcome } from '../platform/db/enums.ts';
import type { CloudEvent } from './ecs-events.ts';

/**
 * insertCloudEvent stores an event, with what applying it did, once per EventBridge id and account: it
 * returns the new row's id, or undefined when the event was stored before (a redelivery).
 */
export async function insertCloudEvent(
  db: Executor,
  v: {
    id: string;
    organizationId: string;
    cloudAccountId: string;
    event: CloudEvent;
    outcome: CloudEventOutcome;
    resourceArn?: string;
    deploymentId?: string;
  },
) {
  const row = await db
    .insertInto('cloud_events')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      cloud_account_id: v.cloudAccountId,
      event_id: v.event.id,
      source: v.event.source,
      detail_type: v.event['detail-type'],
      event_time: new Date(v.event.time),
      outcome: v.outcome,
      resource_arn: v.resourceArn ?? null,
      deployment_id: v.deploymentId ?? null,
      body: JSON.stringify(v.event),
    })
    .onConflict((oc) => oc.columns(['cloud_account_id', 'event_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

export function findCloudEvent(db: Executor, cloudAccountId: string, eventId: string) {
  return db
    .selectFrom('cloud_events')
    .select(['id', 'outcome', 'deployment_id'])
    .where('cloud_account_id', '=', cloudAccountId)
    .where('event_id', '=', eventId)
    .executeTakeFirst();
}
