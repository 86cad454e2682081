import { randomBytes } from 'node:crypto';

let last: Buffer | undefined;
let lastMs = 0n;

/** Randomness is drawn from the system this many bytes at a time: one call per 256 ids rather than one each. */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let pooled = 0;

/** Sixteen random bytes of the pool, copied out: an id's bytes are changed in place as it counts up. */
function randomId(): Buffer {
  if (pooled + 16 > pool.length) {
    pool = randomBytes(POOL_BYTES);
    pooled = 0;
  }
  pooled += 16;
  return Buffer.from(pool.subarray(pooled - 16, pooled));
}

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
  const bytes = randomId();
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
