import { sql } from 'kysely';
import type { Db } from '../platform/db/db.ts';

/** SQL of a run's checkout: the commit the run recorded. */
export interface CommitFence {
  runId: string;
  executionId: string;
  workerId: string;
  leaseEpoch: number;
}

/**
 * recordRunCommit sets the run's commit once, only while this worker still holds the attempt at its
 * lease epoch, and returns the commit the run has now: ours, or the one another step recorded first.
 * Undefined: the attempt is no longer ours (fenced). Locks in the commands' order, the run and then the
 * execution, so the lease check sees what a reaper or a cancel committed before it.
 */
export async function recordRunCommit(db: Db, fence: CommitFence, commitSha: string): Promise<string | undefined> {
  return db.transaction().execute(async (trx) => {
    const run = await trx.selectFrom('pipeline_runs').select('commit_sha').where('id', '=', fence.runId).forNoKeyUpdate().executeTakeFirst();
    if (!run) return undefined;
    const held = await trx
      .selectFrom('step_executions')
      .select('id')
      .where('id', '=', fence.executionId)
      .where('pipeline_run_id', '=', fence.runId)
      .where('status', '=', 'RUNNING')
      .where('lease_owner', '=', fence.workerId)
      .where('lease_epoch', '=', fence.leaseEpoch)
      .forNoKeyUpdate()
      .executeTakeFirst();
    if (!held) return undefined;
    if (run.commit_sha) return run.commit_sha;
    await trx.updateTable('pipeline_runs').set({ commit_sha: commitSha, updated_at: sql<Date>`now()` }).where('id', '=', fence.runId).execute();
    return commitSha;
  });
}
