import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { deniedReason, EgressDeniedError, hostAllowed, type AllowList } from './address-policy.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** How names are resolved: by DNS (systemLookup) unless a test gives another. */
export type Lookup = (host: string) => Promise<ResolvedAddress[]>;

/**
 * The host's DNS resolvers, asked for A and AAAA records through c-ares. Not getaddrinfo: that runs on
 * libuv's small thread pool, where a few names whose servers never answer (a tenant can make one) would
 * stall every other lookup and file operation of the process. So /etc/hosts is not read, but for
 * `localhost` (RFC 6761), which is loopback.
 */
const resolver = new Resolver({ timeout: 3_000, tries: 2 });

export const systemLookup: Lookup = async (host) => {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost'))
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  const [v4, v6] = await Promise.all([resolver.resolve4(name).catch(() => []), resolver.resolve6(name).catch(() => [])]);
  return [...v4.map((address) => ({ address, family: 4 as const })), ...v6.map((address) => ({ address, family: 6 as const }))];
};

const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * resolveAllowed resolves `host` once and returns the address to connect to, or throws
 * EgressDeniedError. Every address the name resolves to must be allowed (a name that resolves to one
 * public and one private address is refused: which one a client would pick is not ours to guess), unless
 * the name itself is allowlisted. The caller connects to the returned address, never to the name again:
 * a second resolution could answer differently (DNS rebinding).
 */
export async function resolveAllowed(host: string, allow: AllowList, lookup: Lookup = systemLookup): Promise<ResolvedAddress> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare)) {
    const reason = deniedReason(bare, allow);
    if (reason) throw new EgressDeniedError(host, bare, reason);
    return { address: bare, family: isIP(bare) === 6 ? 6 : 4 };
  }
  const found = await withTimeout(lookup(bare), LOOKUP_TIMEOUT_MS, `resolving ${host} took over ${LOOKUP_TIMEOUT_MS / 1000} s`);
  if (found.length === 0) throw new Error(`${host} does not resolve`);
  const named = hostAllowed(allow, bare);
  for (const { address } of found) {
    const reason = deniedReason(address, allow, { named });
    if (reason) throw new EgressDeniedError(host, address, reason);
  }
  return found[0]!;
}

/** `promise`, or a rejection with `error()` once `ms` passed, whichever comes first. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, error: string | (() => Error)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const fail = () => (typeof error === 'string' ? new Error(error) : error());
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(fail()), Math.max(0, ms))))]);
  } finally {
    clearTimeout(timer);
  }
}
