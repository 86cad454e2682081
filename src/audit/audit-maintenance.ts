import type { Db } from '../platform/db/db.ts';
import type { Logger } from '../platform/logger.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { deliverDueWebhooks, type DeliveryOptions } from './audit-delivery.ts';
import { applyAuditRetention, ensureAuditPartitions } from './audit.repo.ts';

/**
 * runAuditMaintenance keeps the audit log's partitions and retention: the next months' partitions
 * exist before they are needed; a month older than every organization's retention is dropped whole
 * (no row-by-row delete, no table bloat); rows of organizations that keep less than the longest
 * retention are deleted within the months still kept.
 */
export async function runAuditMaintenance(db: Db): Promise<{ dropped: string[]; deleted: number }> {
  await ensureAuditPartitions(db);
  return applyAuditRetention(db);
}

export interface AuditJobOptions extends DeliveryOptions {
  deliveryEveryMs: number;
  maintenanceEveryMs: number;
}

/**
 * startAuditJobs runs, in a worker process, webhook delivery every `deliveryEveryMs` and maintenance
 * every `maintenanceEveryMs` (and once now). Several workers may run them: deliveries lock their
 * organization's settings row, and maintenance only creates what is missing and drops what is expired.
 */
export function startAuditJobs(db: Db, secrets: SecretBox, log: Logger, options: AuditJobOptions): () => void {
  const loop = (what: string, everyMs: number, fn: () => Promise<unknown>) => {
    let busy = false;
    const tick = () => {
      if (busy) return;
      busy = true;
      fn()
        .catch((error) => log.warn({ err: error }, `audit ${what} failed`))
        .finally(() => (busy = false));
    };
    tick();
    const timer = setInterval(tick, everyMs);
    timer.unref();
    return timer;
  };
  const timers = [
    loop('delivery', options.deliveryEveryMs, () => deliverDueWebhooks(db, secrets, options)),
    loop('maintenance', options.maintenanceEveryMs, async () => {
      const { dropped, deleted } = await runAuditMaintenance(db);
      if (dropped.length || deleted) log.info({ dropped, deleted }, 'applied audit retention');
    }),
  ];
  return () => timers.forEach(clearInterval);
}
