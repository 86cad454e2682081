import type { Executor } from '../platform/db/db.ts';
import type { GitProvider } from '../platform/db/enums.ts';

/**
 * insertDelivery records a delivery id once per code source; false when it was already recorded (a
 * redelivery or a replay): the caller then triggers nothing. The primary key decides, so two copies
 * arriving together cannot both pass.
 */
export async function insertDelivery(db: Executor, v: { codeSourceId: string; deliveryId: string; provider: GitProvider; commitSha: string | null }): Promise<boolean> {
  const row = await db
    .insertInto('git_webhook_deliveries')
    .values({ code_source_id: v.codeSourceId, delivery_id: v.deliveryId, provider: v.provider, commit_sha: v.commitSha })
    .onConflict((oc) => oc.columns(['code_source_id', 'delivery_id']).doNothing())
    .returning('delivery_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function setDeliveryRuns(db: Executor, codeSourceId: string, deliveryId: string, runIds: string[]): Promise<void> {
  await db.updateTable('git_webhook_deliveries').set({ run_ids: JSON.stringify(runIds) }).where('code_source_id', '=', codeSourceId).where('delivery_id', '=', deliveryId).execute();
}
