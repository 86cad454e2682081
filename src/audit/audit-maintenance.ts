import { anchorHolds, anchorIsStale, anchorOf } from '../platform/audit/anchor.ts';
import { lockChainHead, setChainAnchor } from '../platform/audit/audit-writer.repo.ts';
import type { Db } from '../platform/db/db.ts';
import type { Logger } from '../platform/logger.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { deliverDueWebhooks, type DeliveryOptions } from './audit-delivery.ts';
import {
  clearAnchorPending,
  deleteExpiredAuditRows,
  ensureAuditPartitions,
  findChainsAnchoredWithOtherKey,
  findUnanchoredChains,
  findUnvalidatedAuditConstraints,
  lockAnchorPending,
  validateAuditConstraint,
} from './audit.repo.ts';

export interface MaintenanceResult {
  dropped: string[];
  deleted: number;
  /** Organizations whose chain retention left whole: something else had cut it. */
  leftAlone: string[];
  /** Anchors moved onto the current key after a rotation. */
  reanchored: number;
}

/**
 * applyAuditRetention deletes what is past each organization's retention (whole months; the months past
 * every retention with their partitions), which the database records with an `audit.retention` row in
 * each chain it shortened, and moves each such chain's anchor onto that row, in one transaction: no
 * deletion without its record, and the chain still verifies. As an append does, it moves an anchor only
 * if it held for the head the row was appended to: else the head was rewritten outside Plinth, and
 * vouching for the row would vouch for that.
 */
async function applyAuditRetention(db: Db, secrets: SecretBox, log?: Logger): Promise<Omit<MaintenanceResult, 'reanchored'>> {
  return db.transaction().execute(async (trx) => {
    const { dropped, deletions, leftAlone } = await deleteExpiredAuditRows(trx);
    for (const d of deletions) {
      const head = await lockChainHead(trx, secrets, d.organizationId);
      const previous = { organizationId: d.organizationId, seq: d.recordSeq - 1, hash: d.recordPrevHash };
      if (head.seq === d.recordSeq && anchorHolds(secrets, previous, head.anchor)) await setChainAnchor(trx, head, anchorOf(secrets, head));
      else log?.error({ organizationId: d.organizationId }, "the audit chain's anchor does not hold: its head was rewritten outside Plinth");
    }
    return { dropped, deleted: deletions.reduce((n, d) => n + d.count, 0), leftAlone };
  });
}

/** Re-anchors, with the current key, each chain anchored with a previous key that still holds: after a rotation, the old key can go. */
async function moveAnchorsToCurrentKey(db: Db, secrets: SecretBox): Promise<number> {
  let moved = 0;
  for (const organizationId of await findChainsAnchoredWithOtherKey(db, secrets.currentKeyId)) {
    await db.transaction().execute(async (trx) => {
      const head = await lockChainHead(trx, secrets, organizationId);
      if (!head.anchor || !anchorIsStale(secrets, head.anchor) || !anchorHolds(secrets, head, head.anchor)) return;
      await setChainAnchor(trx, head, anchorOf(secrets, head));
      moved++;
    });
  }
  return moved;
}

/**
 * anchorChainsWrittenBefore anchors the chain heads that have none, as they are, while the mark the
 * migration adding anchors left is there, and removes the mark in the same transaction: all of them or
 * none, so a start that fails (no key, a crash) leaves the work to the next. Run by every start, as the
 * owner (the runtime role may not touch the mark). Once the mark is gone, never again: anchoring a head
 * found without an anchor then would vouch for a chain cut short by hand. `openSecrets` is called only
 * when there is a head to anchor, and must never make a key: one the servers lack would break every
 * chain it anchored, for good. Returns how many it anchored.
 */
export async function anchorChainsWrittenBefore(owner: Db, openSecrets: () => SecretBox): Promise<number> {
  return owner.transaction().execute(async (trx) => {
    if (!(await lockAnchorPending(trx))) return 0;
    const organizationIds = await findUnanchoredChains(trx);
    if (organizationIds.length) {
      const secrets = openSecrets();
      for (const organizationId of organizationIds) {
        const head = await lockChainHead(trx, secrets, organizationId);
        if (head.anchor === null) await setChainAnchor(trx, head, anchorOf(secrets, head));
      }
    }
    await clearAnchorPending(trx);
    return organizationIds.length;
  });
}

/**
 * validateAuditConstraints checks the old rows of audit_events against the constraints a migration
 * added unchecked, as the owner, each in a statement of its own: it scans the log, but lets appends and
 * reads go on (a constraint added checked would have held them off for the scan). A constraint that old
 * rows break (rows inserted by hand) stays unchecked for them, which verification reports, and is
 * tried again at the next start: the service runs on.
 */
export async function validateAuditConstraints(owner: Db, log: Logger): Promise<void> {
  for (const constraint of await findUnvalidatedAuditConstraints(owner)) {
    try {
      await validateAuditConstraint(owner, constraint);
    } catch (error) {
      if ((error as { code?: string }).code !== '23514') throw error;
      log.warn({ constraint }, `audit_events holds rows its constraint ${constraint} refuses, inserted outside Plinth: verification reports their chains`);
    }
  }
}

/**
 * runAuditMaintenance keeps the audit log's partitions, retention and anchors: the next months'
 * partitions exist before they are needed; retention deletes, per organization, the whole months past
 * its retention (a month past every organization's goes whole, with its partition: no row-by-row
 * delete, no table bloat) and records it in the chain; an anchor made with a previous key moves to
 * the current one.
 */
export async function runAuditMaintenance(db: Db, secrets: SecretBox, log?: Logger): Promise<MaintenanceResult> {
  await ensureAuditPartitions(db);
  const retention = await applyAuditRetention(db, secrets, log);
  return { ...retention, reanchored: await moveAnchorsToCurrentKey(db, secrets) };
}

export interface AuditJobOptions extends DeliveryOptions {
  deliveryEveryMs: number;
  maintenanceEveryMs: number;
}

/**
 * startAuditJobs runs, in a worker process, webhook delivery every `deliveryEveryMs` and maintenance
 * every `maintenanceEveryMs` (and once now). Several workers may run them: deliveries lock their
 * organization's settings row, and retention runs one at a time in the database.
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
      const { dropped, deleted, leftAlone, reanchored } = await runAuditMaintenance(db, secrets, log);
      if (dropped.length || deleted) log.info({ dropped, deleted }, 'applied audit retention');
      if (reanchored) log.info({ reanchored }, 'moved audit chain anchors to the current key');
      if (leftAlone.length)
        log.warn({ organizationIds: leftAlone }, 'left audit chains cut by something else than retention as they are: GET /audit-events/verify shows where');
    }),
  ];
  return () => timers.forEach(clearInterval);
}
