import { createHmac } from 'node:crypto';
import type { Db } from '../platform/db/db.ts';
import { EgressDeniedError } from '../platform/outbound/address-policy.ts';
import { outboundRequest, type OutboundPolicy } from '../platform/outbound/http.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { findChainRows, lockDueWebhooks, recordDelivery, type AuditSettingsRow } from './audit.repo.ts';
import { auditRowToEvent, webhookSecretContext } from './audit.service.ts';

/**
 * Delivery of audit rows to each organization's webhook: in chain order, in batches, each batch an
 * HTTP POST signed with HMAC-SHA256, retried with exponential backoff until the webhook answers 2xx,
 * every attempt written to the delivery log. One worker delivers an organization's rows at a time (its
 * settings row is locked for the attempt), so batches never overlap or arrive out of order.
 */
export interface DeliveryOptions {
  /** Where webhooks may be (the outbound policy; everything with PLINTH_AUDIT_WEBHOOK_ALLOW_PRIVATE). */
  outbound: OutboundPolicy;
  /** The first retry's delay; each next one doubles, up to an hour. */
  retryBaseMs: number;
  timeoutMs: number;
  batchSize: number;
}

const MAX_RETRY_MS = 3_600_000;

/** The signature header: HMAC-SHA256 of `<timestamp>.<body>` with the organization's webhook secret. */
export function signDelivery(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

async function post(
  settings: AuditSettingsRow,
  secret: string | null,
  body: string,
  options: DeliveryOptions,
): Promise<{ statusCode: number | null; error: string | null }> {
  try {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'plinth-audit-webhook', 'x-plinth-timestamp': timestamp };
    if (secret) headers['x-plinth-signature'] = signDelivery(secret, timestamp, body);
    // The answer is not read beyond its status: a webhook cannot make the worker hold a large body.
    const res = await outboundRequest(
      settings.webhook_url!,
      { method: 'POST', headers, body, timeoutMs: options.timeoutMs, maxBytes: 64 * 1024 },
      options.outbound,
    );
    const ok = res.status >= 200 && res.status <= 299;
    return { statusCode: res.status, error: ok ? null : `answered ${res.status}` };
  } catch (error) {
    // A refused address is named by its rule: what the webhook's name resolves to is the operator's to know.
    if (error instanceof EgressDeniedError) return { statusCode: null, error: `the webhook's address is not allowed: ${error.reason}` };
    return { statusCode: null, error: (error instanceof Error ? error.message : String(error)).slice(0, 500) };
  }
}

/** deliverDueWebhooks makes one delivery attempt for each organization whose next one is due; returns how many. */
export async function deliverDueWebhooks(db: Db, secrets: SecretBox, options: DeliveryOptions): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const due = await lockDueWebhooks(trx, 10);
    for (const settings of due) {
      const org = settings.organization_id;
      const rows = await findChainRows(trx, org, settings.delivered_seq, options.batchSize);
      if (rows.length === 0) continue;
      const body = JSON.stringify({ organizationId: org, events: rows.map(auditRowToEvent) });
      const secret = settings.webhook_secret ? secrets.open(settings.webhook_secret, webhookSecretContext(org)) : null;
      const { statusCode, error } = await post(settings, secret, body, options);
      const attempt = settings.attempts + 1;
      const retryInMs = Math.min(MAX_RETRY_MS, options.retryBaseMs * 2 ** Math.min(20, settings.attempts));
      await recordDelivery(trx, org, {
        fromSeq: rows[0].seq,
        toSeq: rows[rows.length - 1].seq,
        attempt,
        statusCode,
        error,
        delivered: error === null,
        retryInMs,
      });
    }
    return due.length;
  });
}
