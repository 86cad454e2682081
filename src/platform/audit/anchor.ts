import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SecretBox } from '../secrets/secret-box.ts';

// The anchor of an organization's audit chain: an HMAC of its head (the newest row's seq and hash),
// kept beside the head outside the audit table. A hash chain alone shows an edited row or a gap, but
// what is left after cutting its end off still links up; the anchor names the end, and only a holder
// of PLINTH_SECRET_KEY can move it, which the database and its roles are not.

/** The HKDF label of the anchor's key: no other use of the secret key derives the same bytes. */
const ANCHOR_KEY_LABEL = 'plinth audit chain anchor v1';

/** What an anchor vouches for: the newest row of one organization's chain (seq 0, hash '' before its first). */
export interface ChainHead {
  organizationId: string;
  seq: number;
  hash: string;
}

function digest(key: Buffer, head: ChainHead): Buffer {
  return createHmac('sha256', key).update(`${head.organizationId}\n${head.seq}\n${head.hash}`).digest();
}

/** anchorOf is the anchor of `head` with the current key: `<keyId>:<hex HMAC-SHA256>`. */
export function anchorOf(secrets: SecretBox, head: ChainHead): string {
  const key = secrets.deriveKey(ANCHOR_KEY_LABEL)!;
  return `${key.id}:${digest(key.bytes, head).toString('hex')}`;
}

/**
 * anchorHolds tells whether `anchor` was made for exactly this head, with the current key or a previous
 * one (PLINTH_SECRET_KEY_PREVIOUS). A missing anchor, or one made with a key no longer configured, does not.
 */
export function anchorHolds(secrets: SecretBox, head: ChainHead, anchor: string | null): boolean {
  const [keyId, hex, ...rest] = (anchor ?? '').split(':');
  const key = keyId && hex && !rest.length ? secrets.deriveKey(ANCHOR_KEY_LABEL, keyId) : undefined;
  if (!key) return false;
  const given = Buffer.from(hex, 'hex');
  const expected = digest(key.bytes, head);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Whether an anchor was made with another key than the current one (a rotation moves it to the current key). */
export function anchorIsStale(secrets: SecretBox, anchor: string): boolean {
  return !anchor.startsWith(`${secrets.currentKeyId}:`);
}
