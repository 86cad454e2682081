import { sql, type Selectable } from 'kysely';
import type { AuditEventsTable, AuditSettingsTable, AuditWebhookDeliveriesTable } from '../platform/db/database.ts';
import type { Executor, Trx } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import type { AuditFilters } from './audit.schema.ts';

export type AuditEventRow = Selectable<AuditEventsTable>;
export type AuditSettingsRow = Selectable<AuditSettingsTable>;
export type AuditDeliveryRow = Selectable<AuditWebhookDeliveriesTable>;

/** One organization's rows matching the filters, newest first, strictly older than `beforeSeq`. */
export function findAuditEventsPage(
  db: Executor,
  organizationId: string,
  f: AuditFilters,
  page: { limit: number; beforeSeq?: number },
): Promise<AuditEventRow[]> {
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
  return db
    .selectFrom('audit_events')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/**
 * One organization's rows in chain order (by seq, then id), from its first or strictly after `after`:
 * every row, so that a second one with a row's seq shows instead of hiding behind a page's end.
 */
export function findChainPage(db: Executor, organizationId: string, after: { seq: number; id: string } | undefined, limit: number): Promise<AuditEventRow[]> {
  let q = db.selectFrom('audit_events').selectAll().where('organization_id', '=', organizationId);
  // The plain bound on seq is what the (organization_id, seq) index can use; the pair is the page's edge.
  if (after) q = q.where('seq', '>=', after.seq).where(({ eb, refTuple, tuple }) => eb(refTuple('seq', 'id'), '>', tuple(after.seq, after.id)));
  return q.orderBy('seq').orderBy('id').limit(limit).execute();
}

export function findChainHead(db: Executor, organizationId: string): Promise<{ seq: number; hash: string; mac: string | null } | undefined> {
  return db.selectFrom('audit_chain_heads').select(['seq', 'hash', 'mac']).where('organization_id', '=', organizationId).executeTakeFirst();
}

/** The organizations whose chain head has no anchor (written before anchors were). */
export async function findUnanchoredChains(db: Executor): Promise<string[]> {
  const rows = await db.selectFrom('audit_chain_heads').select('organization_id').where('mac', 'is', null).orderBy('organization_id').execute();
  return rows.map((r) => r.organization_id);
}

/**
 * Locks the mark that the chains written before anchors await their first anchor, for the caller's
 * transaction: false once it is gone (a concurrent start that held it has anchored them).
 */
export async function lockAnchorPending(trx: Trx): Promise<boolean> {
  const { rows } = await sql<{ pending: boolean }>`select pending from audit_anchor_pending for update`.execute(trx);
  return rows.length > 0;
}

export async function clearAnchorPending(trx: Trx): Promise<void> {
  await sql`delete from audit_anchor_pending`.execute(trx);
}

/** The check constraints of audit_events that a migration added NOT VALID, and no start has validated yet. */
export async function findUnvalidatedAuditConstraints(db: Executor): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select conname as name from pg_constraint where conrelid = 'audit_events'::regclass and contype = 'c' and not convalidated order by conname`.execute(db);
  return rows.map((r) => r.name);
}

/** Checks the rows audit_events had before `constraint` was added; fails (23514) when one breaks it. */
export async function validateAuditConstraint(db: Executor, constraint: string): Promise<void> {
  await sql`alter table audit_events validate constraint ${sql.id(constraint)}`.execute(db);
}

/** The organizations whose chain anchor was made with another key than `keyId` (before a rotation). */
export async function findChainsAnchoredWithOtherKey(db: Executor, keyId: string): Promise<string[]> {
  const rows = await db.selectFrom('audit_chain_heads').select('organization_id').where('mac', 'not like', `${keyId}:%`).orderBy('organization_id').execute();
  return rows.map((r) => r.organization_id);
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

export async function recordDelivery(
  trx: Trx,
  organizationId: string,
  d: { fromSeq: number; toSeq: number; attempt: number; statusCode: number | null; error: string | null; delivered: boolean; retryInMs: number },
): Promise<void> {
  await trx
    .insertInto('audit_webhook_deliveries')
    .values({
      id: newId(),
      organization_id: organizationId,
      from_seq: d.fromSeq,
      to_seq: d.toSeq,
      attempt: d.attempt,
      status_code: d.statusCode,
      error: d.error,
      delivered: d.delivered,
    })
    .execute();
  await trx
    .updateTable('audit_settings')
    .set(
      d.delivered
        ? { delivered_seq: d.toSeq, attempts: 0, next_attempt_at: sql`now()` }
        : { attempts: d.attempt, next_attempt_at: sql`now() + ${`${d.retryInMs} milliseconds`}::interval` },
    )
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

/** The action of the row retention appends to each chain it shortens. */
export const RETENTION_ACTION = 'audit.retention';

/**
 * What retention deleted of one organization's chain: the rows fromSeq..toSeq, the last one's hash
 * (times as ISO texts); and where it recorded that: the seq of its `audit.retention` row, which is the
 * chain's head now, and the hash of the head before it.
 */
export interface RetentionDeletion {
  organizationId: string;
  retentionDays: number;
  /** The first day of the month its retention reaches into: every deleted row is older. */
  before: string;
  fromSeq: number;
  toSeq: number;
  count: number;
  fromCreatedAt: string;
  toCreatedAt: string;
  lastHash: string;
  recordSeq: number;
  recordPrevHash: string;
}

export interface RetentionResult {
  dropped: string[];
  deletions: RetentionDeletion[];
  /** Organizations whose chain was cut by something else than retention: none of their rows was deleted. */
  leftAlone: string[];
}

/**
 * deleteExpiredAuditRows deletes, per organization, every row up to the last one created before the
 * month its retention reaches into (DEFAULT_RETENTION_DAYS without settings, fixed in the function
 * too), dropping the months past every retention whole, appends to each chain it shortened its
 * `audit.retention` row, and locks those chains' heads for the caller's transaction, which must move
 * their anchors onto that row. It runs as a function with its owner's rights (migrations/0015): the
 * runtime role itself may not delete audit rows.
 */
export async function deleteExpiredAuditRows(trx: Trx): Promise<RetentionResult> {
  const { rows } = await sql<{ result: RetentionResult }>`select audit_apply_retention() as result`.execute(trx);
  return rows[0]!.result;
}
