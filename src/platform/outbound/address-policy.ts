import { BlockList, isIP } from 'node:net';
import os from 'node:os';

/**
 * Which addresses tenants' code and Plinth's own outbound calls may connect to. By default, the public
 * internet only: the host itself, its private networks and the cloud's link-local services (the
 * metadata endpoint at 169.254.169.254 above all) are refused. An operator widens it with an allowlist
 * of CIDRs and host names (`PLINTH_STEP_EGRESS_ALLOW` for steps). A decision is always made on the
 * address about to be connected to, never on a name: names are resolved once, by the caller, and
 * every address they resolve to is checked.
 */

/** Ranges refused unless allowlisted: [network, prefix length, why]. */
const DENIED_V4: ReadonlyArray<readonly [string, number, string]> = [
  ['0.0.0.0', 8, 'this network'],
  ['10.0.0.0', 8, 'a private network'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'a private network'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'a private network'],
  ['198.18.0.0', 15, 'a benchmarking network'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const DENIED_V6: ReadonlyArray<readonly [string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'IPv4-compatible'],
  ['100::', 64, 'discard'],
  ['fc00::', 7, 'a private network'],
  ['fe80::', 10, 'link-local (cloud metadata)'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

function blockList(ranges: ReadonlyArray<readonly [string, number, string]>, type: 'ipv4' | 'ipv6') {
  return ranges.map(([net, bits, why]) => {
    const list = new BlockList();
    list.addSubnet(net, bits, type);
    return { list, why };
  });
}
const V4 = blockList(DENIED_V4, 'ipv4');
const V6 = blockList(DENIED_V6, 'ipv6');

/** An address in the form the policy checks: IPv4 for IPv4-mapped, NAT64 and 6to4 IPv6 (which reach IPv4 hosts). */
export function canonicalAddress(address: string): { address: string; family: 4 | 6 } {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(bare) === 4) return { address: bare, family: 4 };
  const embedded = embeddedIPv4(bare);
  return embedded ? { address: embedded, family: 4 } : { address: bare.toLowerCase(), family: 6 };
}

function embeddedIPv4(v6: string): string | undefined {
  const words = expandIPv6(v6);
  if (!words) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  // ::ffff:a.b.c.d (mapped) and 64:ff9b::a.b.c.d (NAT64): the last 32 bits.
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) return v4(words[6]!, words[7]!);
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)) return v4(words[6]!, words[7]!);
  // 2002:AABB:CCDD::/48 (6to4): bits 16 to 48.
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!);
  return undefined;
}

/** The eight 16-bit words of an IPv6 address (a trailing dotted IPv4 part included), or undefined. */
function expandIPv6(v6: string): number[] | undefined {
  if (isIP(v6) !== 6) return undefined;
  let text = v6;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part ? part.split(':').map((w) => parseInt(w, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const zeros = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<number>(zeros).fill(0), ...right];
}

/** An allowlist entry: a CIDR (or one address), or a host name (`*.example.com` for its subdomains). */
export interface AllowList {
  networks: BlockList;
  hosts: string[];
}

export function parseAllowList(entries: readonly string[], setting: string): AllowList {
  const networks = new BlockList();
  const hosts: string[] = [];
  for (const raw of entries.map((e) => e.trim()).filter(Boolean)) {
    const [net, bits] = raw.split('/') as [string, string | undefined];
    const { address, family } = canonicalAddress(net);
    if (isIP(address)) {
      const max = family === 4 ? 32 : 128;
      const prefix = bits === undefined ? max : Number(bits);
      // An IPv4 network written as mapped IPv6 keeps its IPv4 meaning: count its prefix from bit 96.
      const v4Prefix = family === 4 && isIP(net.replace(/^\[|\]$/g, '')) === 6 ? prefix - 96 : prefix;
      if (!/^\d+$/.test(bits ?? String(max)) || v4Prefix < 0 || v4Prefix > max) throw new Error(`${setting}: "${raw}" is not a valid CIDR`);
      networks.addSubnet(address, v4Prefix, family === 4 ? 'ipv4' : 'ipv6');
    } else if (bits === undefined && /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(raw)) {
      hosts.push(raw.toLowerCase());
    } else {
      throw new Error(`${setting}: "${raw}" is neither a CIDR nor a host name`);
    }
  }
  return { networks, hosts };
}

export const EMPTY_ALLOW_LIST: AllowList = { networks: new BlockList(), hosts: [] };

/** Every address: for an operator's explicit opt-out (PLINTH_AUDIT_WEBHOOK_ALLOW_PRIVATE). */
export const ALLOW_EVERYTHING: AllowList = parseAllowList(['0.0.0.0/0', '::/0'], 'ALLOW_EVERYTHING');

/**
 * `PLINTH_STEP_EGRESS_ALLOW`: what steps, and Plinth's own calls on a tenant's behalf, may reach besides
 * the public internet: CIDRs and host names, separated by commas or spaces.
 */
export function egressAllowListFrom(env: NodeJS.ProcessEnv): AllowList {
  return parseAllowList((env.PLINTH_STEP_EGRESS_ALLOW ?? '').split(/[\s,]+/), 'PLINTH_STEP_EGRESS_ALLOW');
}

/** Whether a host name (as asked for, before resolution) is on the allowlist. */
export function hostAllowed(allow: AllowList, host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return allow.hosts.some((entry) => (entry.startsWith('*.') ? name.endsWith(entry.slice(1)) : name === entry));
}

/** The host's own addresses, refused like loopback: a listener on them is a listener on the host. */
let ownAddresses: { at: number; addresses: Set<string> } | undefined;
function hostAddresses(): Set<string> {
  if (!ownAddresses || Date.now() - ownAddresses.at > 5_000) {
    const addresses = new Set<string>();
    for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) addresses.add(canonicalAddress(a.address).address);
    ownAddresses = { at: Date.now(), addresses };
  }
  return ownAddresses.addresses;
}

/** Why `address` may not be connected to, or undefined when it may (an allowlisted network always may). */
export function deniedReason(address: string, allow: AllowList = EMPTY_ALLOW_LIST): string | undefined {
  const { address: checked, family } = canonicalAddress(address);
  if (!isIP(checked)) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (allow.networks.check(checked, type)) return undefined;
  const range = (family === 4 ? V4 : V6).find(({ list }) => list.check(checked, type));
  if (range) return range.why;
  if (hostAddresses().has(checked)) return 'an address of this host';
  return undefined;
}

/** A connection refused by the policy: nothing was sent to the address. */
export class EgressDeniedError extends Error {
  readonly code = 'EGRESS_DENIED';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(`connecting to ${host === address ? address : `${host} (${address})`} is not allowed: ${reason}`);
  }
}
