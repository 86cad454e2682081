// Where the HTTP app applies the limiter: a request's credential, whatever route checks it (the API's
// bearer keys, the state backend's HTTP Basic and run credentials), passes through these two hooks.

import type { FastifyRequest } from 'fastify';
import { TooManyRequestsError, UnauthenticatedError } from '../errors.ts';
import { keyPrefixOf, type AuthLimiter } from './auth-limiter.ts';
import { presentedToken, RUN_TOKEN_PREFIX } from './tokens.ts';

export const TOO_MANY_FAILURES = 'Auth:Credential:TOO_MANY_FAILURES';

/**
 * refuseBlockedAddress answers 429 to a request that carries a credential from an address over its limit,
 * before the credential is looked at. Requests without one (health checks, the OpenAPI document) pass,
 * and so do run credentials sent to a route that takes them (the state backend): OpenTofu steps reach it
 * from their worker host's address, which every tenant's steps share, and one tenant failing there on
 * purpose must not stop another's runs. A run credential is 256 random bits minted by Plinth and dies
 * with its run: no guess finds one. Anywhere else a run credential can never be valid, so it gets no
 * lookup and no exemption.
 */
export function refuseBlockedAddress(limiter: AuthLimiter, request: FastifyRequest): void {
  if (request.headers.authorization === undefined) return;
  // Fastify types it as a string, but a connection that closed before this hook has no address left.
  const address: string | undefined = request.ip;
  const retryAfterSeconds = limiter.retryAfterSeconds(address);
  if (retryAfterSeconds === undefined) return;
  if (request.routeOptions.config.runCredentials && presentedToken(request.headers.authorization)?.startsWith(RUN_TOKEN_PREFIX)) return;
  throw new TooManyRequestsError(TOO_MANY_FAILURES, `Too many failed authentications from this address: retry after ${retryAfterSeconds} s`, retryAfterSeconds);
}

/**
 * countFailedAuthentication counts a request answered 401 for the credential it presented (unknown,
 * revoked, expired or malformed); one that presented none is not a guess and is not counted.
 */
export function countFailedAuthentication(limiter: AuthLimiter, request: FastifyRequest, error: unknown): void {
  if (!(error instanceof UnauthenticatedError) || error.code === 'Auth:Credential:MISSING') return;
  const address: string | undefined = request.ip;
  const keyPrefix = keyPrefixOf(presentedToken(request.headers.authorization));
  const outcome = limiter.recordFailure(address, keyPrefix);
  if (outcome.addressBlocked) request.log.warn({ address }, 'blocked an address after failed authentications');
  if (outcome.prefixBlocked) request.log.warn({ keyPrefix }, 'a key prefix reached its limit of failed authentications');
}

/**
 * forwardingWatch returns a check that warns, once per process, of a request that names its client in
 * X-Forwarded-For or Forwarded while Plinth takes the connection's address for it: a reverse proxy that
 * is not in PLINTH_TRUSTED_PROXIES (or that sends only Forwarded, which is not read). Behind such a
 * proxy every client has the proxy's address, so one guesser's failures block every client at once;
 * once is enough, since the proxy would repeat it on every request.
 */
export function forwardingWatch(): (request: FastifyRequest) => void {
  let warned = false;
  return (request) => {
    if (warned) return;
    const forwardedFor = request.headers['x-forwarded-for'] !== undefined;
    if (!forwardedFor && request.headers.forwarded === undefined) return;
    const peer = request.socket.remoteAddress;
    // A trusted proxy's X-Forwarded-For gave the request another address: nothing was ignored.
    if (peer === undefined || request.ip !== peer) return;
    warned = true;
    const why = forwardedFor ? `${peer} is not in PLINTH_TRUSTED_PROXIES` : 'only X-Forwarded-For is read, not Forwarded';
    request.log.warn(
      { peer },
      `a request names its client in a forwarding header that is ignored (${why}): every client behind that proxy is counted as ${peer}, ` +
        'so one client failing to authenticate blocks them all; list the proxy in PLINTH_TRUSTED_PROXIES (logged once)',
    );
  };
}
