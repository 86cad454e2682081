import { sql } from 'kysely';
import type { Db } from '../platform/db/db.ts';
import { ACTIVE_RUN_STATUSES } from '../platform/db/enums.ts';

export interface QueueGaugeRow {
  /** Jobs of the run queue by state: ready, scheduled (run_at later), running (locked), failed (no attempts left). */
  jobs: Record<string, number> | null;
  oldest_ready_seconds: number | null;
  runs: Record<string, number> | null;
  approvals: number;
}

/**
 * findQueueGauges reads every sampled gauge in one statement. Each part is cheap: graphile-worker
 * keeps only live jobs, and the unfinished runs and waiting approvals are read through partial
 * indexes (migrations/0011_audit.sql), whatever the number of finished ones.
 */
export async function findQueueGauges(db: Db): Promise<QueueGaugeRow> {
  const { rows } = await sql<QueueGaugeRow>`
    select
      (select json_object_agg(state, n) from (
         select case when locked_at is not null then 'running' when attempts >= max_attempts then 'failed'
                     when run_at > now() then 'scheduled' else 'ready' end as state, count(*)::int as n
           from graphile_worker.jobs group by 1) j) as jobs,
      (select extract(epoch from now() - min(run_at))::float8 from graphile_worker.jobs
        where locked_at is null and attempts < max_attempts and run_at <= now()) as oldest_ready_seconds,
      (select json_object_agg(status, n) from (
         select status, count(*)::int as n from pipeline_runs where status in (${sql.join(ACTIVE_RUN_STATUSES)}) group by status) r) as runs,
      (select count(*)::int from step_executions where status = 'WAITING_FOR_APPROVAL') as approvals`.execute(db);
  return rows[0];
}
