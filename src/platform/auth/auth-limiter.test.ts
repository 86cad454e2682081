import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressKey, AuthLimiter, FailureCounter, keyPrefixOf, type AuthLimitSettings } from './auth-limiter.ts';

const SETTINGS: AuthLimitSettings = { failuresPerAddress: 3, failuresPerKeyPrefix: 5, windowMs: 60_000, blockMs: 10_000, maxEntries: 100 };

/** A limiter on a clock the test moves (the HTTP tests run it on the real one). */
function limiter(settings: Partial<AuthLimitSettings> = {}) {
  let now = 1_000_000;
  const l = new AuthLimiter({ ...SETTINGS, ...settings }, () => now);
  return { l, advance: (ms: number) => (now += ms) };
}

describe('failed authentications: per address and per key prefix', () => {
  it('an address is blocked at its limit, for the block time, then starts afresh', () => {
    const { l, advance } = limiter();
    assert.deepEqual(l.recordFailure('192.0.2.1', undefined), { addressBlocked: false, prefixBlocked: false });
    l.recordFailure('192.0.2.1', undefined);
    assert.equal(l.retryAfterSeconds('192.0.2.1'), undefined);
    assert.deepEqual(l.recordFailure('192.0.2.1', undefined), { addressBlocked: true, prefixBlocked: false });
    assert.equal(l.retryAfterSeconds('192.0.2.1'), 10);
    assert.equal(l.retryAfterSeconds('192.0.2.2'), undefined, 'other addresses are not touched');
    advance(9_001);
    assert.equal(l.retryAfterSeconds('192.0.2.1'), 1, 'rounded up: a client that waits Retry-After is let in');
    advance(999);
    assert.equal(l.retryAfterSeconds('192.0.2.1'), undefined);
    assert.equal(l.recordFailure('192.0.2.1', undefined).addressBlocked, false, 'a fresh budget after the block');
  });

  it('failures older than the window are forgotten', () => {
    const { l, advance } = limiter();
    l.recordFailure('192.0.2.1', undefined);
    l.recordFailure('192.0.2.1', undefined);
    advance(60_000);
    assert.equal(l.recordFailure('192.0.2.1', undefined).addressBlocked, false);
    assert.equal(l.recordFailure('192.0.2.1', undefined).addressBlocked, false);
    assert.equal(l.recordFailure('192.0.2.1', undefined).addressBlocked, true);
  });

  it('a prefix over its limit costs any address that fails with it its whole budget at once', () => {
    const { l } = limiter();
    for (let i = 1; i <= 4; i++) assert.equal(l.recordFailure(`198.51.100.${i}`, 'plk_abcdef').prefixBlocked, false);
    assert.deepEqual(l.recordFailure('198.51.100.5', 'plk_abcdef'), { addressBlocked: false, prefixBlocked: true });
    // No address is refused for the prefix alone: a valid key of it still passes wherever it comes from.
    assert.equal(l.retryAfterSeconds('198.51.100.6'), undefined);
    assert.deepEqual(l.recordFailure('198.51.100.6', 'plk_abcdef'), { addressBlocked: true, prefixBlocked: false });
    assert.equal(l.retryAfterSeconds('198.51.100.6'), 10);
    assert.equal(l.recordFailure('198.51.100.7', 'plk_zzzzzz').addressBlocked, false, 'another prefix is counted apart');
  });

  it('IPv6 addresses are counted by their /64, IPv4-mapped ones as IPv4', () => {
    assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:db8:1:2:bbbb::9'), '2001:db8:1:2::/64');
    assert.equal(addressKey('::ffff:192.0.2.7'), '192.0.2.7');
    const { l } = limiter();
    for (let i = 1; i <= 3; i++) l.recordFailure(`2001:db8:1:2::${i}`, undefined);
    assert.equal(l.retryAfterSeconds('2001:db8:1:2:ffff::ffff'), 10);
    assert.equal(l.retryAfterSeconds('2001:db8:1:3::1'), undefined);
  });

  it('the key prefix is that of an API key only', () => {
    assert.equal(keyPrefixOf('plk_abcdefghijklmnop'), 'plk_abcdef');
    assert.equal(keyPrefixOf('plr_runcredential'), undefined);
    assert.equal(keyPrefixOf(undefined), undefined);
  });

  it('a port after the address is dropped: one counter per address, not per source port', () => {
    assert.equal(addressKey('192.0.2.7:5678'), '192.0.2.7');
    assert.equal(addressKey('[2001:db8:1:2::7]:443'), '2001:db8:1:2::/64');
    assert.equal(addressKey('[2001:db8:1:2::7]'), '2001:db8:1:2::/64');
    assert.equal(addressKey('[::ffff:192.0.2.7]:80'), '192.0.2.7');
    assert.equal(addressKey('2001:db8:1:2::5678'), '2001:db8:1:2::/64', 'a bare IPv6 address keeps its last word');
    const { l } = limiter();
    for (let port = 40_000; port < 40_003; port++) l.recordFailure(`192.0.2.7:${port}`, undefined);
    assert.equal(l.retryAfterSeconds('192.0.2.7:50000'), 10);
    assert.equal(l.retryAfterSeconds('192.0.2.7'), 10);
  });

  it('a request without an address (its connection closed) is neither refused nor counted', () => {
    const { l } = limiter({ failuresPerAddress: 1, failuresPerKeyPrefix: 1 });
    assert.deepEqual(l.recordFailure(undefined, 'plk_abcdef'), { addressBlocked: false, prefixBlocked: false });
    assert.deepEqual(l.recordFailure(undefined, undefined), { addressBlocked: false, prefixBlocked: false });
    assert.equal(l.recordFailure('192.0.2.1', undefined).addressBlocked, true);
    assert.equal(l.retryAfterSeconds(undefined), undefined);
    assert.equal(l.recordFailure('192.0.2.2', 'plk_abcdef').prefixBlocked, true, 'the prefix had no failure counted before');
  });
});

describe('failed authentications: what the capped memory forgets', () => {
  /** A counter with limit 3, a 60 s window and a 10 s block. */
  const counter = (maxEntries: number) => new FailureCounter(3, 60_000, 10_000, maxEntries);
  const blockIt = (c: FailureCounter, key: string, now: number) => {
    for (let i = 0; i < 3; i++) c.fail(key, now);
    assert.ok(c.blockedForMs(key, now) > 0);
  };

  it('memory stays within the cap however many keys fail; the stalest key that is not blocked is forgotten first', () => {
    const c = counter(1000);
    c.fail('stale', 0);
    c.fail('stale', 0);
    for (let i = 0; i < 100_000; i++) c.fail(`key-${i}`, 1);
    assert.equal(c.size, 1000);
    assert.equal(c.fail('stale', 2), false, 'forgotten: its third failure is its first again');
  });

  it('a flood of /64s from one IPv6 /48 (it holds 65,536), past the cap, does not wash out the block of its sender', () => {
    let now = 1_000_000;
    const l = new AuthLimiter({ ...SETTINGS, maxEntries: 10_000 }, () => now);
    for (let i = 0; i < 3; i++) l.recordFailure('2001:db8:aaaa:1::1', undefined);
    for (let i = 0; i < 12_000; i++) {
      l.recordFailure(`2001:db8:aaaa:${i.toString(16)}::1`, undefined);
      now += 0.01;
    }
    assert.ok(l.retryAfterSeconds('2001:db8:aaaa:1::99') !== undefined, 'still blocked');
  });

  it('ended blocks go first, then keys not blocked, oldest first; a live block only when all are blocked, the one ending soonest', () => {
    const c = counter(3);
    blockIt(c, 'ended', 0);
    blockIt(c, 'blocked', 5_000);
    c.fail('counting', 5_000);
    c.fail('newcomer', 10_000);
    assert.equal(c.size, 3);
    assert.equal(c.blockedForMs('blocked', 10_000), 5_000, 'an ended block was forgotten instead');
    c.fail('another', 10_000);
    assert.equal(c.fail('counting', 10_000), false);
    assert.equal(c.fail('counting', 10_000), false, 'forgotten before: two failures, not three');
    assert.equal(c.blockedForMs('blocked', 10_000), 5_000);

    const full = counter(2);
    blockIt(full, 'first', 0);
    blockIt(full, 'second', 1_000);
    blockIt(full, 'third', 2_000);
    assert.equal(full.size, 2);
    assert.equal(full.blockedForMs('first', 2_000), 0, 'every key blocked: the block ending soonest is forgotten');
    assert.equal(full.blockedForMs('second', 2_000), 9_000);
    assert.equal(full.blockedForMs('third', 2_000), 10_000);
  });

  it('the key just counted is kept even when every other key is blocked', () => {
    const c = counter(2);
    blockIt(c, 'blocked-1', 0);
    blockIt(c, 'blocked-2', 0);
    c.fail('guesser', 1);
    c.fail('guesser', 1);
    assert.equal(c.fail('guesser', 1), true, 'its failures were counted, not forgotten one by one');
    assert.equal(c.size, 2);
  });
});
