import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { deniedReason, EgressDeniedError, hostAllowed, type AllowList } from './address-policy.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** How names are resolved: the system's resolver (getaddrinfo: /etc/hosts, then DNS) unless a test gives another. */
export type Lookup = (host: string) => Promise<ResolvedAddress[]>;

export const systemLookup: Lookup = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

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
  if (hostAllowed(allow, bare)) return found[0]!;
  for (const { address } of found) {
    const reason = deniedReason(address, allow);
    if (reason) throw new EgressDeniedError(host, address, reason);
  }
  return found[0]!;
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
