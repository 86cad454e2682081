import { randomBytes } from 'node:crypto';

let last: Buffer | undefined;
let lastMs = 0n;

/**
 * newId returns an opaque, time-ordered identifier (a UUIDv7 in lower-case hex without dashes).
 * Time order lets keyset pagination use the id alone as a stable sort key. Within one process the ids
 * only grow: two made in the same millisecond (or after the clock stepped back) follow each other, as
 * RFC 9562 allows by counting up in the random bits, so records written one after the other list in
 * that order.
 */
export function newId(): string {
  const now = BigInt(Date.now());
  if (last && now <= lastMs && countUp(last)) return last.toString('hex');
  const bytes = randomBytes(16);
  lastMs = now > lastMs ? now : lastMs + 1n;
  for (let i = 0; i < 6; i++) bytes[i] = Number((lastMs >> BigInt(8 * (5 - i))) & 0xffn);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  // Half the counter's room is kept free, so counting up from a random start rarely runs out.
  bytes[9] &= 0x7f;
  last = bytes;
  return bytes.toString('hex');
}

/** Adds one to the last 7 bytes of `id` in place; false (leaving it as it was) when they are all 0xff. */
function countUp(id: Buffer): boolean {
  for (let i = 15; i >= 9; i--) {
    if (id[i] < 0xff) {
      id[i]++;
      for (let j = i + 1; j <= 15; j++) id[j] = 0;
      return true;
    }
  }
  return false;
}
