import { randomBytes } from 'node:crypto';

/**
 * newId returns an opaque, time-ordered identifier (a UUIDv7 in lower-case hex without dashes).
 * Time order lets keyset pagination use the id alone as a stable sort key.
 */
export function newId(): string {
  const bytes = randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  return bytes.toString('hex');
}
