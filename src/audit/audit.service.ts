import type { Principal } from '../platform/auth/principal.ts';
import { chainHash, type ChainedFields } from '../platform/audit/chain.ts';
import type { Db } from '../platform/db/db.ts';
import { encodeCursor, serialCursorKey, type PageMeta, type PageRequest } from '../platform/pagination.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { findAuditEventsPage, findAuditSettings, findChainHead, findChainRows, findDeliveriesPage, upsertAuditSettings, type AuditDeliveryRow, type AuditEventRow, type AuditSettingsRow } from './audit.repo.ts';
import type { AuditDelivery, AuditEvent, AuditFilters, AuditSettings, AuditSettingsPatch, AuditVerification } from './audit.schema.ts';

/** An organization keeps its audit rows this long unless it says otherwise. */
/** Also fixed in audit_apply_retention (migrations/0013), which the runtime role cannot give another. */
export const DEFAULT_RETENTION_DAYS = 365;

export function webhookSecretContext(organizationId: string): string {
  return `audit_settings.webhook_secret:${organizationId}`;
}

function fieldsOf(r: AuditEventRow): ChainedFields {
  return {
    id: r.id, organizationId: r.organization_id, seq: r.seq, createdAt: r.created_at.toISOString(), actorType: r.actor_type, actorId: r.actor_id,
    apiKeyId: r.api_key_id, action: r.action, resourceType: r.resource_type, resourceId: r.resource_id, outcome: r.outcome, statusCode: r.status_code,
    errorCode: r.error_code, requestId: r.request_id, ip: r.ip, userAgent: r.user_agent, diff: r.diff,
  };
}

export function auditRowToEvent(r: AuditEventRow): AuditEvent {
  const { diff, ...fields } = fieldsOf(r);
  return { ...fields, actorType: r.actor_type, outcome: r.outcome, ...(diff === null ? {} : { diff }), prevHash: r.prev_hash, hash: r.hash };
}

/** listAuditEvents pages through the caller's organization's audit log, newest first. */
export async function listAuditEvents(db: Db, principal: Principal, filters: AuditFilters, page: PageRequest): Promise<{ items: AuditEvent[]; meta: PageMeta }> {
  const before = serialCursorKey(page.after);
  const rows = await findAuditEventsPage(db, principal.organizationId, filters, { limit: page.limit + 1, beforeSeq: before === undefined ? undefined : Number(before) });
  const items = rows.slice(0, page.limit);
  const meta: PageMeta = { limit: page.limit };
  if (rows.length > page.limit) meta.nextCursor = encodeCursor(String(items[items.length - 1].seq));
  return { items: items.map(auditRowToEvent), meta };
}

/** exportAuditEvents yields every matching row as one NDJSON line, newest first, a page at a time. */
export async function* exportAuditEvents(db: Db, principal: Principal, filters: AuditFilters): AsyncGenerator<string> {
  let beforeSeq: number | undefined;
  for (;;) {
    const rows = await findAuditEventsPage(db, principal.organizationId, filters, { limit: 500, beforeSeq });
    for (const row of rows) yield `${JSON.stringify(auditRowToEvent(row))}\n`;
    if (rows.length < 500) return;
    beforeSeq = rows[rows.length - 1].seq;
  }
}

/**
 * verifyAuditChain recomputes the organization's chain from its oldest kept row: each row must link to
 * the row before it and hash to what it says, and the last must be the chain head. The oldest kept
 * row's link is taken as given (retention removed what it points at), unless it is the very first.
 */
export async function verifyAuditChain(db: Db, organizationId: string): Promise<AuditVerification> {
  let checked = 0;
  let prev: { seq: number; hash: string } | undefined;
  for (;;) {
    const rows = await findChainRows(db, organizationId, prev?.seq ?? 0, 1000);
    for (const row of rows) {
      const expectedPrev = prev ? prev.hash : row.seq === 1 ? '' : row.prev_hash;
      if (prev && row.seq !== prev.seq + 1) return { valid: false, checked, brokenAtSeq: prev.seq + 1, reason: 'a row is missing' };
      if (row.prev_hash !== expectedPrev) return { valid: false, checked, brokenAtSeq: row.seq, reason: 'does not link to the row before it' };
      if (chainHash(row.prev_hash, fieldsOf(row)) !== row.hash) return { valid: false, checked, brokenAtSeq: row.seq, reason: 'its content does not match its hash' };
      prev = { seq: row.seq, hash: row.hash };
      checked++;
    }
    if (rows.length < 1000) break;
  }
  const head = await findChainHead(db, organizationId);
  // No row kept at all: retention removed the whole chain, and nothing is left to check.
  if (head && prev && (head.seq !== prev.seq || head.hash !== prev.hash)) {
    return { valid: false, checked, brokenAtSeq: (prev?.seq ?? 0) + 1, reason: 'rows after the last one kept are missing' };
  }
  return { valid: true, checked };
}

function settingsOf(row: AuditSettingsRow | undefined): AuditSettings {
  return {
    retentionDays: row?.retention_days ?? DEFAULT_RETENTION_DAYS,
    webhookUrl: row?.webhook_url ?? null,
    webhookSecretSet: Boolean(row?.webhook_secret),
    deliveredSeq: row?.delivered_seq ?? 0,
  };
}

export async function getAuditSettings(db: Db, principal: Principal): Promise<AuditSettings> {
  return settingsOf(await findAuditSettings(db, principal.organizationId));
}

/** updateAuditSettings changes retention and the webhook; the secret is sealed and never returned. */
export async function updateAuditSettings(db: Db, secrets: SecretBox, principal: Principal, patch: AuditSettingsPatch): Promise<AuditSettings> {
  const org = principal.organizationId;
  const row = await upsertAuditSettings(db, org, {
    retentionDays: patch.retentionDays,
    webhookUrl: patch.webhookUrl,
    webhookSecret: patch.webhookSecret === undefined ? undefined : secrets.seal(patch.webhookSecret, webhookSecretContext(org)),
  });
  return settingsOf(row);
}

function deliveryOf(r: AuditDeliveryRow): AuditDelivery {
  return { id: r.id, fromSeq: r.from_seq, toSeq: r.to_seq, attempt: r.attempt, statusCode: r.status_code, error: r.error, delivered: r.delivered, createdAt: r.created_at.toISOString() };
}

/** listAuditDeliveries pages through the webhook's delivery log, newest first. */
export async function listAuditDeliveries(db: Db, principal: Principal, page: PageRequest): Promise<{ items: AuditDelivery[]; meta: PageMeta }> {
  const rows = await findDeliveriesPage(db, principal.organizationId, { limit: page.limit + 1, beforeId: page.after });
  const items = rows.slice(0, page.limit);
  const meta: PageMeta = { limit: page.limit };
  if (rows.length > page.limit) meta.nextCursor = encodeCursor(items[items.length - 1].id);
  return { items: items.map(deliveryOf), meta };
}
