import { sql, type Selectable } from 'kysely';
import type { AuditEventsTable, AuditSettingsTable, AuditWebhookDeliveriesTable } from '../platform/db/database.ts';
import type { Db, Executor, Trx } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import type { AuditFilters } from './audit.schema.ts';

export type AuditEventRow = Selectable<AuditEventsTable>;
export type AuditSettingsRow = Selectable<AuditSettingsTable>;
export type AuditDeliveryRow = Selectable<AuditWebhookDeliveriesTable>;

/** One organization's rows matching the filters, newest first, strictly older than `beforeSeq`. */
export function findAuditEventsPage(db: Executor, organizationId: string, f: AuditFilters, page: { limit: number; beforeSeq?: number }): Promise<AuditEventRow[]> {
  let q = db.selectFrom('audit_events').selectAll().where('organization_id', '=', organizationId);
  if (f.action) q = q.where('action', '=', f.action);
  if (f.actorId) q = q.where('actor_id', '=', f.actorId);
  if (f.resourceType) q = q.where('resource_type', '=', f.resourceType);
  if (f.resourceId) q = q.where('resource_id', '=', f.resourceId);
  if (f.outcome) q = q.where('outcome', '=', f.outcome);
  if (f.since) q = q.where('created_at', '>=', new Date(f.since));
  if (f.until) q = q.where('created_at', '<', new Date(f.until));
  if (page.beforeSeq !== undefined) q = q.where('seq', '<', page.beforeSeq);
  return q.orderBy('seq', 'desc').limit(page.limit).execute();
}

/** One organization's rows in chain order, strictly after `afterSeq`. */
export function findChainRows(db: Executor, organizationId: string, afterSeq: number, limit: number): Promise<AuditEventRow[]> {
  return db.selectFrom('audit_events').selectAll().where('organization_id', '=', organizationId).where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
}

export async function findChainHead(db: Executor, organizationId: string): Promise<{ seq: number; hash: string } | undefined> {
  return db.selectFrom('audit_chain_heads').select(['seq', 'hash']).where('organization_id', '=', organizationId).executeTakeFirst();
}

export function findAuditSettings(db: Executor, organizationId: string): Promise<AuditSettingsRow | undefined> {
  return db.selectFrom('audit_settings').selectAll().where('organization_id', '=', organizationId).executeTakeFirst();
}

export interface AuditSettingsValues {
  retentionDays?: number;
  webhookUrl?: string | null;
  /** Sealed. */
  webhookSecret?: string | null;
}

export function upsertAuditSettings(db: Executor, organizationId: string, v: AuditSettingsValues): Promise<AuditSettingsRow> {
  const set = {
    ...(v.retentionDays !== undefined ? { retention_days: v.retentionDays } : {}),
    ...(v.webhookUrl !== undefined ? { webhook_url: v.webhookUrl } : {}),
    ...(v.webhookSecret !== undefined ? { webhook_secret: v.webhookSecret } : {}),
  };
  return db
    .insertInto('audit_settings')
    .values({ organization_id: organizationId, ...set })
    .onConflict((oc) => oc.column('organization_id').doUpdateSet({ ...set, updated_at: sql`now()`, attempts: 0, next_attempt_at: sql`now()` }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Webhooks with rows not yet delivered and a try due, locked so that one worker delivers each. */
export function lockDueWebhooks(trx: Trx, limit: number): Promise<(AuditSettingsRow & { head_seq: number })[]> {
  return trx
    .selectFrom('audit_settings as s')
    .innerJoin('audit_chain_heads as h', 'h.organization_id', 's.organization_id')
    .selectAll('s')
    .select('h.seq as head_seq')
    .where('s.webhook_url', 'is not', null)
    .whereRef('h.seq', '>', 's.delivered_seq')
    .where('s.next_attempt_at', '<=', sql<Date>`now()`)
    .orderBy('s.next_attempt_at')
    .limit(limit)
    .forUpdate('s')
    .skipLocked()
    .execute();
}

export async function recordDelivery(trx: Trx, organizationId: string, d: { fromSeq: number; toSeq: number; attempt: number; statusCode: number | null; error: string | null; delivered: boolean; retryInMs: number }): Promise<void> {
  await trx
    .insertInto('audit_webhook_deliveries')
    .values({ id: newId(), organization_id: organizationId, from_seq: d.fromSeq, to_seq: d.toSeq, attempt: d.attempt, status_code: d.statusCode, error: d.error, delivered: d.delivered })
    .execute();
  await trx
    .updateTable('audit_settings')
    .set(d.delivered
      ? { delivered_seq: d.toSeq, attempts: 0, next_attempt_at: sql`now()` }
      : { attempts: d.attempt, next_attempt_at: sql`now() + ${`${d.retryInMs} milliseconds`}::interval` })
    .where('organization_id', '=', organizationId)
    .execute();
}

export function findDeliveriesPage(db: Executor, organizationId: string, page: { limit: number; beforeId?: string }): Promise<AuditDeliveryRow[]> {
  let q = db.selectFrom('audit_webhook_deliveries').selectAll().where('organization_id', '=', organizationId);
  if (page.beforeId) q = q.where('id', '<', page.beforeId);
  return q.orderBy('id', 'desc').limit(page.limit).execute();
}

/** ensureAuditPartitions creates the monthly partitions from this month to `monthsAhead` on. */
export async function ensureAuditPartitions(db: Executor, monthsAhead = 2): Promise<void> {
  await sql`select audit_ensure_partitions(${monthsAhead}::int)`.execute(db);
}

/**
 * applyAuditRetention deletes the rows older than their organization's retention (DEFAULT_RETENTION_DAYS
 * without settings, fixed in the function too), oldest first, so that what stays of a chain is a suffix of it, which verification
 * accepts; a month older than every retention goes whole, with its partition. It runs as a function
 * with its owner's rights (migrations/0013): the runtime role itself may not delete audit rows.
 */
export async function applyAuditRetention(db: Executor): Promise<{ dropped: string[]; deleted: number }> {
  const { rows } = await sql<{ dropped: string[]; deleted: number }>`select dropped, deleted from audit_apply_retention()`.execute(db);
  return { dropped: rows[0]?.dropped ?? [], deleted: Number(rows[0]?.deleted ?? 0) };
}
