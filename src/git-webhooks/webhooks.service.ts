import { createHash } from 'node:crypto';
import type { Db } from '../platform/db/db.ts';
import { AppError, BadRequestError } from '../platform/errors.ts';
import { parseJsonBody } from '../platform/http/input-rules.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { findCodeSourceById } from '../code-sources/code-sources.repo.ts';
import { webhookSecretContext } from '../code-sources/credentials.ts';
import { triggerStackRunsForPush } from '../stacks/stacks.service.ts';
import { detectDelivery, parsePush, touches, verifyDelivery, type Headers } from './push-events.ts';
import { insertDelivery, setDeliveryRuns } from './webhooks.repo.ts';

export interface WebhookResult {
  deliveryId: string;
  /** The delivery was handled before: nothing was triggered again. */
  duplicate: boolean;
  /** Why nothing was triggered, when nothing was. */
  ignored?: string;
  runIds: string[];
}

/** One answer for every delivery that cannot be verified: an unknown source says no more than a bad signature. */
const unverified = () => new AppError(401, 'Git:Webhook:UNVERIFIED', 'The delivery is not signed with the webhook secret of a code source of this service');

/**
 * handlePushWebhook verifies a delivery over its raw bytes (before parsing anything), then records its
 * delivery id once, and for a branch push triggers the runs of the stacks it concerns, all in one
 * transaction: a replay of the same delivery id triggers nothing. Anything unverified is a 401 and
 * stores nothing.
 */
export async function handlePushWebhook(db: Db, secrets: SecretBox, codeSourceId: string, headers: Headers, rawBody: Buffer): Promise<WebhookResult> {
  const delivery = detectDelivery(headers);
  const source = await findCodeSourceById(db, codeSourceId);
  if (!delivery || !source?.webhook_secret_sealed) throw unverified();
  const secret = secrets.open(source.webhook_secret_sealed, webhookSecretContext(source.id));
  if (!verifyDelivery(delivery, headers, rawBody, secret)) throw unverified();
  // A provider that sends no delivery id: the body's hash stands in, so an identical replay is still one delivery.
  const deliveryId = (delivery.deliveryId || `sha256:${createHash('sha256').update(rawBody).digest('hex')}`).slice(0, 200);
  let body: unknown;
  try {
    body = parseJsonBody(rawBody.toString('utf8'));
  } catch {
    throw new BadRequestError("The delivery is not JSON (set the webhook's content type to application/json)", [], 'Git:Webhook:INVALID');
  }
  const push = parsePush(delivery, body);
  return db.transaction().execute(async (trx) => {
    const fresh = await insertDelivery(trx, { codeSourceId: source.id, deliveryId, provider: delivery.provider, commitSha: push?.commitSha ?? null });
    if (!fresh) return { deliveryId, duplicate: true, runIds: [] };
    if (!push) return { deliveryId, duplicate: false, ignored: `not a branch push (${delivery.event})`, runIds: [] };
    const runIds = await triggerStackRunsForPush(trx, {
      organizationId: source.organization_id,
      codeSourceId: source.id,
      ...push,
      deliveryId,
      provider: delivery.provider,
      touches: (path) => touches(push, path),
    });
    await setDeliveryRuns(trx, source.id, deliveryId, runIds);
    return { deliveryId, duplicate: false, runIds, ...(runIds.length ? {} : { ignored: 'no stack tracks this branch and path' }) };
  });
}
