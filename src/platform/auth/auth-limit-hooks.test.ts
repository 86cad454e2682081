import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { TooManyRequestsError, UnauthenticatedError } from '../errors.ts';
import { countFailedAuthentication, forwardingWatch, refuseBlockedAddress } from './auth-limit-hooks.ts';
import { AuthLimiter } from './auth-limiter.ts';
import { authenticate } from './authenticate.ts';
import type { CredentialStore } from './credential-store.ts';

const RUN_TOKEN = `plr_${'r'.repeat(43)}`;

interface FakeRequest {
  headers: Record<string, string>;
  /** What Fastify computed (undefined once the connection closed); the connection's own is `peer`. */
  ip?: string;
  peer?: string;
  runCredentials?: boolean;
  warnings?: unknown[][];
}

function fake({ headers, ip, peer = ip, runCredentials, warnings = [] }: FakeRequest): FastifyRequest {
  return {
    headers,
    ip,
    socket: { remoteAddress: peer },
    routeOptions: { config: runCredentials ? { runCredentials } : {} },
    log: { warn: (...args: unknown[]) => warnings.push(args) },
  } as unknown as FastifyRequest;
}

/** A limiter that blocks an address at its first failure. */
const strict = () => new AuthLimiter({ failuresPerAddress: 1, failuresPerKeyPrefix: 100, windowMs: 60_000, blockMs: 60_000, maxEntries: 100 });
const failure = new UnauthenticatedError('INVALID', 'The credential is not valid');

describe('the failed-authentication hooks', () => {
  it('a request whose connection closed (no address left) is neither refused nor counted, and does not throw', () => {
    const limiter = strict();
    countFailedAuthentication(limiter, fake({ headers: { authorization: 'Bearer plk_wrong' }, ip: '192.0.2.1' }), failure);
    const gone = fake({ headers: { authorization: 'Bearer plk_wrong' }, ip: undefined });
    assert.doesNotThrow(() => refuseBlockedAddress(limiter, gone));
    assert.doesNotThrow(() => countFailedAuthentication(limiter, gone, failure));
    assert.throws(() => refuseBlockedAddress(limiter, fake({ headers: { authorization: 'Bearer plk_x' }, ip: '192.0.2.1' })), TooManyRequestsError);
  });

  it('from a blocked address, a run credential passes only to a route that takes run credentials', () => {
    const limiter = strict();
    countFailedAuthentication(limiter, fake({ headers: { authorization: 'Bearer plk_wrong' }, ip: '192.0.2.1' }), failure);
    const basic = `Basic ${Buffer.from(`opentofu:${RUN_TOKEN}`).toString('base64')}`;
    assert.doesNotThrow(() => refuseBlockedAddress(limiter, fake({ headers: { authorization: basic }, ip: '192.0.2.1', runCredentials: true })));
    assert.doesNotThrow(() =>
      refuseBlockedAddress(limiter, fake({ headers: { authorization: `Bearer ${RUN_TOKEN}` }, ip: '192.0.2.1', runCredentials: true })),
    );
    assert.throws(() => refuseBlockedAddress(limiter, fake({ headers: { authorization: `Bearer ${RUN_TOKEN}` }, ip: '192.0.2.1' })), TooManyRequestsError);
  });

  it('a run credential sent to an API route is refused without a lookup, and counted as a failure', async () => {
    const credentials = { resolve: () => assert.fail('a run credential was looked up') } as unknown as CredentialStore;
    const request = fake({ headers: { authorization: `Bearer ${RUN_TOKEN}` }, ip: '192.0.2.9' });
    const error = await authenticate(credentials, request).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof UnauthenticatedError);
    assert.equal(error.code, 'Auth:Credential:INVALID');
    const limiter = strict();
    countFailedAuthentication(limiter, request, error);
    assert.equal(limiter.retryAfterSeconds('192.0.2.9'), 60);
  });

  it('a forwarding header that is ignored is warned of once per process, naming PLINTH_TRUSTED_PROXIES', () => {
    const warnings: unknown[][] = [];
    const watch = forwardingWatch();
    watch(fake({ headers: {}, ip: '192.0.2.1', warnings }));
    watch(fake({ headers: { 'x-forwarded-for': '203.0.113.1' }, ip: '203.0.113.1', peer: '192.0.2.5', warnings }));
    assert.equal(warnings.length, 0, 'no header, or one a trusted proxy sent: nothing ignored');
    for (let i = 0; i < 3; i++) watch(fake({ headers: { 'x-forwarded-for': '203.0.113.1' }, ip: '192.0.2.1', warnings }));
    assert.equal(warnings.length, 1);
    assert.deepEqual(warnings[0]![0], { peer: '192.0.2.1' });
    assert.match(String(warnings[0]![1]), /192\.0\.2\.1 is not in PLINTH_TRUSTED_PROXIES.*counted as 192\.0\.2\.1/);

    const forwardedOnly: unknown[][] = [];
    const other = forwardingWatch();
    other(fake({ headers: { forwarded: 'for=203.0.113.1' }, ip: '192.0.2.5', warnings: forwardedOnly }));
    other(fake({ headers: { 'x-forwarded-for': '203.0.113.1' }, ip: '192.0.2.6', warnings: forwardedOnly }));
    assert.equal(forwardedOnly.length, 1);
    assert.match(String(forwardedOnly[0]![1]), /only X-Forwarded-For is read, not Forwarded.*PLINTH_TRUSTED_PROXIES/);
  });
});
