import { sql } from 'kysely';
import type { Executor } from '../platform/db/db.ts';
import type { GitProvider } from '../platform/db/enums.ts';

/**
 * insertDelivery records a delivery id once per code source; false when it was already recorded (a
 * redelivery or a replay): the caller then triggers nothing. The primary key decides, so two copies
 * arriving together cannot both pass.
 */
export async function insertDelivery(
  db: Executor,
  v: { codeSourceId: string; deliveryId: string; provider: GitProvider; commitSha: string | null },
): Promise<boolean> {
  const row = await db
    .insertInto('git_webhook_deliveries')
    .values({ code_source_id: v.codeSourceId, delivery_id: v.deliveryId, provider: v.provider, commit_sha: v.commitSha })
    .onConflict((oc) => oc.columns(['code_source_id', 'delivery_id']).doNothing())
    .returning('delivery_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function setDeliveryRuns(db: Executor, codeSourceId: string, deliveryId: string, runIds: string[]): Promise<void> {
  await db
    .updateTable('git_webhook_deliveries')
    .set({ run_ids: JSON.stringify(runIds) })
    .where('code_source_id', '=', codeSourceId)
    .where('delivery_id', '=', deliveryId)
    .execute();
}

export interface TrackedBranch {
  code_source_id: string;
  branch: string;
}

/** A stack's source a push would run: it names a code source and a ref, and onPush is not `none`. */
const TRACKED = sql`s.source ->> 'codeSourceId' is not null and s.source ->> 'ref' is not null and coalesce(s.source ->> 'onPush', 'apply') <> 'none'`;

/**
 * The branches stacks track that a push would run (for the poller), a page of code sources at a time:
 * every tracked branch of the first `sources` code sources whose id sorts after `after`, in id order.
 * A read-only join of stacks, whose source names the code source and the ref.
 */
export async function findTrackedBranches(db: Executor, after: string, sources: number): Promise<TrackedBranch[]> {
  const { rows } = await sql<TrackedBranch>`
    with page as (
      select distinct s.source ->> 'codeSourceId' as id from stacks s
       where ${TRACKED} and s.source ->> 'codeSourceId' > ${after}
       order by 1 limit ${sources}
    )
    select distinct s.source ->> 'codeSourceId' as code_source_id, regexp_replace(s.source ->> 'ref', '^refs/heads/', '') as branch
      from stacks s join page on page.id = s.source ->> 'codeSourceId'
     where ${TRACKED}
     order by 1, 2`.execute(db);
  return rows;
}

/**
 * advancePollHead records the head the poller saw: the first sight is a baseline (false: nothing to
 * run); a head that moved returns true, once, however many workers poll (the row lock decides).
 */
export async function advancePollHead(trx: Executor, codeSourceId: string, branch: string, commitSha: string): Promise<boolean> {
  const seen = await trx
    .selectFrom('git_poll_heads')
    .select('commit_sha')
    .where('code_source_id', '=', codeSourceId)
    .where('branch', '=', branch)
    .forUpdate()
    .executeTakeFirst();
  if (!seen) {
    await trx
      .insertInto('git_poll_heads')
      .values({ code_source_id: codeSourceId, branch, commit_sha: commitSha })
      .onConflict((oc) => oc.columns(['code_source_id', 'branch']).doNothing())
      .execute();
    return false;
  }
  if (seen.commit_sha === commitSha) return false;
  await trx
    .updateTable('git_poll_heads')
    .set({ commit_sha: commitSha, polled_at: sql<Date>`now()` })
    .where('code_source_id', '=', codeSourceId)
    .where('branch', '=', branch)
    .execute();
  return true;
}
