import type { Principal } from '../platform/auth/principal.ts';
import { anchorHolds } from '../platform/audit/anchor.ts';
import { chainHash, type ChainedFields } from '../platform/audit/chain.ts';
import type { Db } from '../platform/db/db.ts';
import { encodeCursor, serialCursorKey, type PageMeta, type PageRequest } from '../platform/pagination.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import {
  findAuditEventsPage,
  findAuditSettings,
  findChainHead,
  findChainPage,
  findDeliveriesPage,
  RETENTION_ACTION,
  upsertAuditSettings,
  type AuditDeliveryRow,
  type AuditEventRow,
  type AuditSettingsRow,
} from './audit.repo.ts';
import type { AuditDelivery, AuditEvent, AuditFilters, AuditSettings, AuditSettingsPatch, AuditVerification } from './audit.schema.ts';

/** An organization keeps its audit rows this long unless it says otherwise. */
/** Also fixed in audit_apply_retention (migrations/0013), which the runtime role cannot give another. */
export const DEFAULT_RETENTION_DAYS = 365;

export function webhookSecretContext(organizationId: string): string {
  return `audit_settings.webhook_secret:${organizationId}`;
}

function fieldsOf(r: AuditEventRow): ChainedFields {
  return {
    id: r.id,
    organizationId: r.organization_id,
    seq: r.seq,
    createdAt: r.created_at.toISOString(),
    actorType: r.actor_type,
    actorId: r.actor_id,
    apiKeyId: r.api_key_id,
    action: r.action,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    outcome: r.outcome,
    statusCode: r.status_code,
    errorCode: r.error_code,
    requestId: r.request_id,
    ip: r.ip,
    userAgent: r.user_agent,
    diff: r.diff,
  };
}

export function auditRowToEvent(r: AuditEventRow): AuditEvent {
  const { diff, ...fields } = fieldsOf(r);
  return { ...fields, actorType: r.actor_type, outcome: r.outcome, ...(diff === null ? {} : { diff }), prevHash: r.prev_hash, hash: r.hash };
}

/** listAuditEvents pages through the caller's organization's audit log, newest first. */
export async function listAuditEvents(
  db: Db,
  principal: Principal,
  filters: AuditFilters,
  page: PageRequest,
): Promise<{ items: AuditEvent[]; meta: PageMeta }> {
  const before = serialCursorKey(page.after);
  const rows = await findAuditEventsPage(db, principal.organizationId, filters, {
    limit: page.limit + 1,
    beforeSeq: before === undefined ? undefined : Number(before),
  });
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

/** A place where the chain does not hold: the first row concerned, and what is wrong. */
interface ChainBreak {
  brokenAtSeq: number;
  reason: string;
}

/** What a retention row of a chain says: the last row it deleted, and the horizon it deleted up to. */
interface RetentionBoundary {
  toSeq: number;
  lastHash: string;
  before: number;
}

/**
 * What `row` says as a retention row: only one of the platform's, recording rows deleted before
 * itself. The caller takes it only from the chain it walked, hashed and matched to the anchor: the
 * runtime role may insert rows, and one it made up outside the chain would vouch for any start.
 */
function retentionBoundary(row: AuditEventRow): RetentionBoundary | undefined {
  if (row.action !== RETENTION_ACTION || row.actor_type !== 'SYSTEM') return undefined;
  const diff = (row.diff ?? {}) as { toSeq?: unknown; lastHash?: unknown; before?: unknown };
  const toSeq = Number(diff.toSeq);
  if (!Number.isSafeInteger(toSeq) || toSeq >= row.seq) return undefined;
  return { toSeq, lastHash: String(diff.lastHash), before: Date.parse(String(diff.before)) };
}

/**
 * The oldest kept row must be the chain's first (seq 1, no previous hash) or follow the last row its
 * newest retention row deleted, and be no older than the horizon that retention deleted up to (it
 * deleted every row before it): anything else was deleted by someone other than retention, however old.
 */
function startBreak(first: AuditEventRow, boundary: RetentionBoundary | undefined): ChainBreak | undefined {
  const expected = boundary ? { seq: boundary.toSeq + 1, prevHash: boundary.lastHash } : { seq: 1, prevHash: '' };
  if (first.seq > expected.seq) {
    const missing = `rows ${expected.seq} to ${first.seq - 1} are missing`;
    return {
      brokenAtSeq: expected.seq,
      reason: boundary ? `${missing}: retention deleted rows only up to ${boundary.toSeq}` : `${missing}, and retention never deleted any`,
    };
  }
  if (first.seq !== expected.seq || first.prev_hash !== expected.prevHash) {
    return { brokenAtSeq: first.seq, reason: boundary ? 'does not link to the last row retention deleted' : 'does not start the chain' };
  }
  if (boundary && !(first.created_at.getTime() >= boundary.before)) {
    return { brokenAtSeq: first.seq, reason: 'is older than the horizon retention deleted every row before' };
  }
  return undefined;
}

function rowBreak(row: AuditEventRow, prev: AuditEventRow): ChainBreak | undefined {
  if (row.seq === prev.seq) return { brokenAtSeq: row.seq, reason: 'a second row has this seq' };
  if (row.seq !== prev.seq + 1) return { brokenAtSeq: prev.seq + 1, reason: 'a row is missing' };
  if (row.prev_hash !== prev.hash) return { brokenAtSeq: row.seq, reason: 'does not link to the row before it' };
  return undefined;
}

/** The newest kept row must be the head the anchor vouches for, and the anchor must hold. */
function endBreak(
  secrets: SecretBox,
  organizationId: string,
  head: { seq: number; hash: string; mac: string | null } | undefined,
  last: AuditEventRow | undefined,
): ChainBreak | undefined {
  if (!head) return last ? { brokenAtSeq: last.seq, reason: 'the chain has no head: its anchor was deleted' } : undefined;
  if (!anchorHolds(secrets, { organizationId, seq: head.seq, hash: head.hash }, head.mac)) {
    const why = head.mac ? 'its chain head was rewritten outside Plinth, or anchored with a key that is no longer configured' : 'its chain head has none';
    return { brokenAtSeq: Math.min(head.seq, last?.seq ?? head.seq) + 1, reason: `the anchor does not hold: ${why}` };
  }
  if (!last) return head.seq === 0 ? undefined : { brokenAtSeq: 1, reason: `every row is missing: the anchor vouches for rows up to ${head.seq}` };
  if (last.seq < head.seq) return { brokenAtSeq: last.seq + 1, reason: `rows after ${last.seq} are missing: the anchor vouches for rows up to ${head.seq}` };
  if (last.seq > head.seq) return { brokenAtSeq: head.seq + 1, reason: `rows after ${head.seq}, the newest the anchor vouches for, were added outside Plinth` };
  if (last.hash !== head.hash) return { brokenAtSeq: last.seq, reason: 'is not the row the anchor vouches for' };
  return undefined;
}

/**
 * verifyAuditChain recomputes the organization's chain, in one snapshot: each row must link to the row
 * before it and hash to what it says, the newest must be the head that the anchor (an HMAC keyed by
 * PLINTH_SECRET_KEY) vouches for, and the oldest kept row must start the chain or follow what the
 * newest retention row of that chain last deleted. So an edited, reordered, added or removed row
 * shows, and so does a removed start or end, or a whole chain removed, unless its head went with it
 * (docs/operations.md#audit-log). A break inside the chain or at its end is named before one at its
 * start: only a chain that holds up to its anchor can vouch for where it starts.
 */
export async function verifyAuditChain(db: Db, secrets: SecretBox, organizationId: string): Promise<AuditVerification> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => {
      const head = await findChainHead(trx, organizationId);
      let checked = 0;
      let first: AuditEventRow | undefined;
      let prev: AuditEventRow | undefined;
      let boundary: RetentionBoundary | undefined;
      for (;;) {
        const rows = await findChainPage(trx, organizationId, prev && { seq: prev.seq, id: prev.id }, 1000);
        for (const row of rows) {
          const broken = prev && rowBreak(row, prev);
          if (broken) return { valid: false, checked, ...broken };
          if (chainHash(row.prev_hash, fieldsOf(row)) !== row.hash)
            return { valid: false, checked, brokenAtSeq: row.seq, reason: 'its content does not match its hash' };
          first ??= row;
          boundary = retentionBoundary(row) ?? boundary;
          prev = row;
          checked++;
        }
        if (rows.length < 1000) break;
      }
      const broken = endBreak(secrets, organizationId, head, prev) ?? (first && startBreak(first, boundary));
      return broken ? { valid: false, checked, ...broken } : { valid: true, checked };
    });
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
  return {
    id: r.id,
    fromSeq: r.from_seq,
    toSeq: r.to_seq,
    attempt: r.attempt,
    statusCode: r.status_code,
    error: r.error,
    delivered: r.delivered,
    createdAt: r.created_at.toISOString(),
  };
}

/** listAuditDeliveries pages through the webhook's delivery log, newest first. */
export async function listAuditDeliveries(db: Db, principal: Principal, page: PageRequest): Promise<{ items: AuditDelivery[]; meta: PageMeta }> {
  const rows = await findDeliveriesPage(db, principal.organizationId, { limit: page.limit + 1, beforeId: page.after });
  const items = rows.slice(0, page.limit);
  const meta: PageMeta = { limit: page.limit };
  if (rows.length > page.limit) meta.nextCursor = encodeCursor(items[items.length - 1].id);
  return { items: items.map(deliveryOf), meta };
}
