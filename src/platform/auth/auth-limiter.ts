// Failed authentications, counted per source address and per API-key prefix in this process's memory,
// so that guessing keys is refused without a single valid key being slowed (docs/operations.md#failed-authentications).

import { canonicalAddress, expandIPv6 } from '../outbound/address-policy.ts';
import { positiveIntFrom } from '../env-settings.ts';
import { TOKEN_PREFIX, tokenDisplayPrefix } from './tokens.ts';

export interface AuthLimitSettings {
  /** PLINTH_AUTH_FAILURES_PER_ADDRESS: failures from one address within the window before it is blocked. */
  failuresPerAddress: number;
  /** PLINTH_AUTH_FAILURES_PER_KEY_PREFIX: failures with keys of one prefix within the window before the prefix is blocked. */
  failuresPerKeyPrefix: number;
  /** PLINTH_AUTH_FAILURE_WINDOW_S, as ms: how long failures are counted together. */
  windowMs: number;
  /** PLINTH_AUTH_BLOCK_S, as ms: how long a block lasts. */
  blockMs: number;
  /** PLINTH_AUTH_LIMIT_ENTRIES: addresses, and separately prefixes, remembered at most. */
  maxEntries: number;
}

/** loadAuthLimits reads the PLINTH_AUTH_* settings; anything but a positive integer stops the start. */
export function loadAuthLimits(env: NodeJS.ProcessEnv): AuthLimitSettings {
  return {
    failuresPerAddress: positiveIntFrom(env, 'PLINTH_AUTH_FAILURES_PER_ADDRESS', 30),
    failuresPerKeyPrefix: positiveIntFrom(env, 'PLINTH_AUTH_FAILURES_PER_KEY_PREFIX', 30),
    windowMs: positiveIntFrom(env, 'PLINTH_AUTH_FAILURE_WINDOW_S', 60) * 1000,
    blockMs: positiveIntFrom(env, 'PLINTH_AUTH_BLOCK_S', 60) * 1000,
    maxEntries: positiveIntFrom(env, 'PLINTH_AUTH_LIMIT_ENTRIES', 10_000),
  };
}

/**
 * addressKey is what an address is counted under: an IPv4 address as it is (IPv4-mapped IPv6 too), an
 * IPv6 address by its /64, the block one host or one subscriber is given; counting single IPv6
 * addresses would give a guesser 2^64 fresh budgets. A port is dropped (`192.0.2.7:5678`,
 * `[2001:db8::1]:443`, as some proxies forward them): one counter per source port would be one budget
 * per connection.
 */
export function addressKey(address: string): string {
  const { address: canonical, family } = canonicalAddress(withoutPort(address));
  const words = family === 6 ? expandIPv6(canonical) : undefined;
  return words
    ? `${words
        .slice(0, 4)
        .map((w) => w.toString(16))
        .join(':')}::/64`
    : canonical;
}

function withoutPort(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) return bracketed[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(address);
  return v4 ? v4[1]! : address;
}

/** keyPrefixOf is the public prefix of an API key (`plk_` and six characters, as listed), or undefined for any other token. */
export function keyPrefixOf(token: string | undefined): string | undefined {
  return token?.startsWith(TOKEN_PREFIX) ? tokenDisplayPrefix(token) : undefined;
}

interface Entry {
  failures: number;
  windowStartMs: number;
  /** 0 when no block was ever set. */
  blockedUntilMs: number;
}

/**
 * FailureCounter counts failures per key (an address or a prefix) in a window that starts at the key's
 * first failure, and blocks the key for a while once they reach the limit; after a window or a block
 * ends, the key starts afresh. It remembers at most `maxEntries` keys. Past that it forgets, first, a
 * block that has ended; then, among the keys not blocked, the one whose last failure is oldest; a key
 * still blocked only when every other one is, the one whose block ends soonest. The key just counted is
 * never the one forgotten. A flood of fresh addresses (an IPv6 /48 holds 65,536 /64s) thus cannot wash
 * out the block of whoever sent it, and no number of addresses or prefixes grows the counter further.
 */
export class FailureCounter {
  // Maps iterate in insertion order, and every write re-inserts its key. Keys not blocked: the first is
  // the one whose last failure is oldest. Blocked keys: each block is set to blockMs from a monotonic
  // now, so the first is the block that ends soonest. Eviction only ever looks at the two first keys.
  private readonly counting = new Map<string, Entry>();
  private readonly blocked = new Map<string, Entry>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly blockMs: number,
    private readonly maxEntries: number,
  ) {}

  /** How many keys are remembered: at most `maxEntries`. */
  get size(): number {
    return this.counting.size + this.blocked.size;
  }

  /** Whether any key may be blocked (a block that has ended but is still remembered included). */
  get anyBlocked(): boolean {
    return this.blocked.size > 0;
  }

  /** How long `key` stays blocked, in ms; 0 when it is not. */
  blockedForMs(key: string, now: number): number {
    const entry = this.blocked.get(key);
    return entry && entry.blockedUntilMs > now ? entry.blockedUntilMs - now : 0;
  }

  /** fail counts a failure of `key`; true when this failure started a block. Failures during a block extend it. */
  fail(key: string, now: number): boolean {
    const entry = this.take(key, now);
    const wasBlocked = entry.blockedUntilMs > now;
    if (++entry.failures >= this.limit || wasBlocked) entry.blockedUntilMs = now + this.blockMs;
    this.put(key, entry, now);
    return !wasBlocked && entry.blockedUntilMs > now;
  }

  /** block blocks `key` at once, whatever it had left; true when it was not blocked before. */
  block(key: string, now: number): boolean {
    const entry = this.take(key, now);
    const wasBlocked = entry.blockedUntilMs > now;
    entry.blockedUntilMs = now + this.blockMs;
    this.put(key, entry, now);
    return !wasBlocked;
  }

  /** The entry of `key`, out of both maps: a fresh one when it had none or its window or block is over. */
  private take(key: string, now: number): Entry {
    const entry = this.counting.get(key) ?? this.blocked.get(key);
    this.counting.delete(key);
    this.blocked.delete(key);
    const over = entry && (entry.blockedUntilMs === 0 ? now - entry.windowStartMs >= this.windowMs : entry.blockedUntilMs <= now);
    return !entry || over ? { failures: 0, windowStartMs: now, blockedUntilMs: 0 } : entry;
  }

  private put(key: string, entry: Entry, now: number): void {
    (entry.blockedUntilMs > now ? this.blocked : this.counting).set(key, entry);
    while (this.size > this.maxEntries) {
      const soonest = firstKey(this.blocked);
      const stalest = firstKey(this.counting);
      if (soonest !== undefined && this.blocked.get(soonest)!.blockedUntilMs <= now) this.blocked.delete(soonest);
      else if (stalest !== undefined && stalest !== key) this.counting.delete(stalest);
      else this.blocked.delete(soonest!);
    }
  }
}

function firstKey(map: Map<string, Entry>): string | undefined {
  return map.keys().next().value;
}

/** What one failure blocked: the address, the key prefix, both or neither (each reported once, when its block starts). */
export interface FailureOutcome {
  addressBlocked: boolean;
  prefixBlocked: boolean;
}

/**
 * AuthLimiter decides which requests are refused for failed authentications. An address over its limit
 * is refused before its key is looked at (a valid key included: otherwise a guesser there would still
 * learn which of its guesses is right). A prefix over its limit is not refused before the lookup, since
 * anyone can fail with another's prefix and would otherwise lock its owner out: a valid key of that
 * prefix still passes from any address that is not blocked; a failure with it blocks its address at once.
 */
export class AuthLimiter {
  private readonly addresses: FailureCounter;
  private readonly prefixes: FailureCounter;

  constructor(
    readonly settings: AuthLimitSettings,
    // Monotonic: a wall clock set back would lengthen every block.
    private readonly clock: () => number = () => performance.now(),
  ) {
    const { windowMs, blockMs, maxEntries } = settings;
    this.addresses = new FailureCounter(settings.failuresPerAddress, windowMs, blockMs, maxEntries);
    this.prefixes = new FailureCounter(settings.failuresPerKeyPrefix, windowMs, blockMs, maxEntries);
  }

  /**
   * The seconds a request from `address` must wait before authenticating again, or undefined when it
   * need not. A request without an address (its connection closed before it was read) is never refused:
   * nobody is left to answer, and nothing learnt from its lookup reaches anyone.
   */
  retryAfterSeconds(address: string | undefined): number | undefined {
    // Every authenticated request asks: while nothing is blocked, it costs a comparison.
    if (!this.addresses.anyBlocked || address === undefined) return undefined;
    const ms = this.addresses.blockedForMs(addressKey(address), this.clock());
    return ms > 0 ? Math.ceil(ms / 1000) : undefined;
  }

  /**
   * recordFailure counts a failed authentication from `address` with a key of `prefix` (undefined: not an
   * API key). Without an address nothing is counted: the connection closed, so no guesser heard the
   * answer, and counting every such request under one shared key would let anyone block that key for all.
   */
  recordFailure(address: string | undefined, prefix: string | undefined): FailureOutcome {
    if (address === undefined) return { addressBlocked: false, prefixBlocked: false };
    const now = this.clock();
    const key = addressKey(address);
    if (prefix === undefined) return { addressBlocked: this.addresses.fail(key, now), prefixBlocked: false };
    // Under attack already: one more failure with it spends the whole budget of the address it came from,
    // so a guesser spread over many addresses gets one guess from each, not the per-address limit.
    const underAttack = this.prefixes.blockedForMs(prefix, now) > 0;
    const prefixBlocked = this.prefixes.fail(prefix, now);
    const addressBlocked = underAttack ? this.addresses.block(key, now) : this.addresses.fail(key, now);
    return { addressBlocked, prefixBlocked };
  }
}
