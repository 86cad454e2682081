// The secret that authenticates a cloud account's events (docs/deployments.md#ingest-secret). It is
// random and long, so a SHA-256 of it is what is stored: no slow hash is needed against guessing.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'plis_';

/** The header the EventBridge connection is configured to send the secret in. */
export const INGEST_SECRET_HEADER = 'x-plinth-ingest-secret';

/** How long the previous secret stays valid after a rotation, unless the rotation says otherwise. */
export const DEFAULT_PREVIOUS_SECRET_SECONDS = 24 * 3600;
export const MAX_PREVIOUS_SECRET_SECONDS = 7 * 24 * 3600;

export function newIngestSecret(): { secret: string; sha256: Buffer } {
  const secret = PREFIX + randomBytes(32).toString('base64url');
  return { secret, sha256: sha256Of(secret) };
}

function sha256Of(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

export interface StoredIngestSecrets {
  ingest_secret_sha256: Buffer | null;
  previous_ingest_secret_sha256: Buffer | null;
  previous_ingest_secret_expires_at: Date | null;
}

/** ingestSecretMatches compares a presented secret with the current one and, until it expires, the previous one, in constant time. */
export function ingestSecretMatches(stored: StoredIngestSecrets, presented: string, now = new Date()): boolean {
  const given = sha256Of(presented);
  const current = stored.ingest_secret_sha256 !== null && timingSafeEqual(given, stored.ingest_secret_sha256);
  const previousValid = stored.previous_ingest_secret_expires_at !== null && stored.previous_ingest_secret_expires_at > now;
  const previous = stored.previous_ingest_secret_sha256 !== null && timingSafeEqual(given, stored.previous_ingest_secret_sha256);
  return current || (previous && previousValid);
}
