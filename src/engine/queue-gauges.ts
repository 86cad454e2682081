import type { Db } from '../platform/db/db.ts';
import { ACTIVE_RUN_STATUSES } from '../platform/db/enums.ts';
import type { Logger } from '../platform/logger.ts';
import { metrics } from '../platform/metrics/metrics.ts';
import { findQueueGauges, type QueueGaugeRow } from './queue-gauges.repo.ts';

/** How often a process samples the queue: a scrape reads the last sample and never queries. */
export const QUEUE_SAMPLE_MS = 15_000;

const JOB_STATES = ['ready', 'scheduled', 'running', 'failed'] as const;

function setGauges(row: QueueGaugeRow): void {
  for (const state of JOB_STATES) metrics.queueJobs.set({ state }, row.jobs?.[state] ?? 0);
  metrics.queueOldestReadyAge.set(row.oldest_ready_seconds ?? 0);
  for (const status of ACTIVE_RUN_STATUSES) metrics.runsCurrent.set({ status }, row.runs?.[status] ?? 0);
  metrics.approvalsPending.set(row.approvals);
}

/** sampleQueueGauges takes one sample now. */
export async function sampleQueueGauges(db: Db): Promise<void> {
  setGauges(await findQueueGauges(db));
}

/**
 * startQueueSampler samples the queue gauges at once and then every `everyMs`, with one query each
 * time, whatever the number of scrapes; the returned function stops it. A failed sample keeps the
 * last values and is logged: the database may be restarting.
 */
export function startQueueSampler(db: Db, log: Logger, everyMs = QUEUE_SAMPLE_MS): () => void {
  let busy = false;
  const sample = () => {
    if (busy) return;
    busy = true;
    sampleQueueGauges(db)
      .catch((error) => log.warn({ err: error }, 'failed to sample the queue gauges'))
      .finally(() => (busy = false));
  };
  sample();
  const timer = setInterval(sample, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
