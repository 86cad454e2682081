import { BlockList, isIP } from 'node:net';
import os from 'node:os';
import { bareHost, canonicalAddress } from './address-forms.ts';

export { bareHost, canonicalAddress, expandIPv6 } from './address-forms.ts';

/**
 * Which addresses tenants' code and Plinth's own outbound calls may connect to. By default, the public
 * internet only: the host itself, its private networks and the cloud's link-local services (the
 * metadata endpoint at 169.254.169.254 above all) are refused. An operator widens it with an allowlist
 * of CIDRs and host names (`PLINTH_STEP_EGRESS_ALLOW` for steps). A decision is always made on the
 * address about to be connected to, never on a name: names are resolved once, by the caller, and
 * every address they resolve to is checked.
 */

/**
 * Ranges refused unless allowlisted: [network, prefix length, why]. Loopback and link-local
 * (NARROW_RANGES) are opened only by an allowlist entry that lies wholly inside them (a broad CIDR
 * never opens them), and the cloud's metadata and host-agent addresses and this host's own addresses
 * only by an entry naming exactly that address.
 */
const DENIED_V4: ReadonlyArray<readonly [string, number, string]> = [
  ['10.0.0.0', 8, 'a private network'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['172.16.0.0', 12, 'a private network'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'a private network'],
  ['198.18.0.0', 15, 'a benchmarking network'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const DENIED_V6: ReadonlyArray<readonly [string, number, string]> = [
  ['::', 96, 'IPv4-compatible'],
  ['::ffff:0:0:0', 96, 'IPv4-translated'],
  ['64:ff9b:1::', 48, 'local-use NAT64'],
  ['100::', 64, 'discard'],
  ['2001::', 32, 'Teredo'],
  ['fc00::', 7, 'a private network'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

/** Opened only by an allowlist entry inside them: [network, prefix length, family, why]. */
const NARROW_RANGES: ReadonlyArray<readonly [string, number, 4 | 6, string]> = [
  ['127.0.0.0', 8, 4, 'loopback'],
  ['::1', 128, 6, 'loopback'],
  // Connecting to "this network" or the unspecified address reaches this host's own listeners.
  ['0.0.0.0', 8, 4, 'this host (unspecified)'],
  ['::', 128, 6, 'this host (unspecified)'],
  ['169.254.0.0', 16, 4, 'link-local (cloud metadata)'],
  ['fe80::', 10, 6, 'link-local (cloud metadata)'],
];

/** The clouds' metadata and host-agent addresses outside link-local: opened only by naming them exactly. */
const METADATA_ADDRESSES = new Map([
  ['fd00:ec2::254', 'the cloud metadata service'],
  ['168.63.129.16', 'the cloud host agent'],
]);

function blockList(ranges: ReadonlyArray<readonly [string, number, string]>, type: 'ipv4' | 'ipv6') {
  return ranges.map(([net, bits, why]) => {
    const list = new BlockList();
    list.addSubnet(net, bits, type);
    return { list, why };
  });
}
const V4 = blockList(DENIED_V4, 'ipv4');
const V6 = blockList(DENIED_V6, 'ipv6');
const NARROW = NARROW_RANGES.map(([net, bits, family, why]) => ({
  net,
  bits,
  family,
  why,
  list: blockList([[net, bits, why]], family === 4 ? 'ipv4' : 'ipv6')[0]!.list,
}));

/** An allowlist: CIDRs (or single addresses), and host names (`*.example.com` for their subdomains). */
export interface AllowList {
  networks: BlockList;
  /** The same networks one by one, to tell whether an entry lies inside a narrow range or names one address. */
  entries: Array<{ address: string; prefix: number; family: 4 | 6; list: BlockList }>;
  hosts: string[];
}

type AllowEntry = { network: AllowList['entries'][number] } | { host: string } | { problem: string };

/** One allowlist entry read: a network, a host name, or what is wrong with it. */
function readAllowEntry(raw: string): AllowEntry {
  const [net, bits, ...rest] = raw.split('/') as [string, string | undefined, ...string[]];
  const { address, family } = canonicalAddress(net);
  if (isIP(address)) {
    const max = family === 4 ? 32 : 128;
    const prefix = bits === undefined ? max : Number(bits);
    // An IPv4 network written as mapped IPv6 keeps its IPv4 meaning: count its prefix from bit 96.
    const v4Prefix = family === 4 && isIP(net.replace(/^\[|\]$/g, '')) === 6 ? prefix - 96 : prefix;
    if (rest.length > 0 || !/^\d+$/.test(bits ?? String(max)) || v4Prefix < 0 || v4Prefix > max) return { problem: 'is not a valid CIDR' };
    const list = new BlockList();
    list.addSubnet(address, v4Prefix, family === 4 ? 'ipv4' : 'ipv6');
    return { network: { address, prefix: v4Prefix, family, list } };
  }
  if (bits === undefined && /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(raw)) return { host: raw.toLowerCase() };
  return { problem: raw ? 'is neither a CIDR nor a host name' : 'is empty' };
}

export function parseAllowList(entries: readonly string[], setting: string): AllowList {
  const networks = new BlockList();
  const parsed: AllowList['entries'] = [];
  const hosts: string[] = [];
  for (const raw of entries.map((e) => e.trim()).filter(Boolean)) {
    const entry = readAllowEntry(raw);
    if ('problem' in entry) throw new Error(`${setting}: "${raw}" ${entry.problem}`);
    if ('host' in entry) hosts.push(entry.host);
    else {
      networks.addSubnet(entry.network.address, entry.network.prefix, entry.network.family === 4 ? 'ipv4' : 'ipv6');
      parsed.push(entry.network);
    }
  }
  return { networks, entries: parsed, hosts };
}

export const EMPTY_ALLOW_LIST: AllowList = { networks: new BlockList(), entries: [], hosts: [] };

/** Why one allowlist entry does not read, or undefined when it does. */
export function allowEntryProblem(entry: string): string | undefined {
  const read = readAllowEntry(entry.trim());
  return 'problem' in read ? read.problem : undefined;
}

/**
 * Whether a connection a policy allowed stays allowed under a narrowing list (an execution
 * environment's): the name is listed, or the address lies in a listed network. Returns why not.
 */
export function narrowedOut(host: string, address: string, narrow: AllowList): string | undefined {
  const { address: checked, family } = canonicalAddress(address);
  if (hostAllowed(narrow, bareHost(host)) || narrow.networks.check(checked, family === 4 ? 'ipv4' : 'ipv6')) return undefined;
  return "not in the execution environment's egress allowlist";
}

/** Every address but link-local and the cloud's metadata: an operator's opt-out (PLINTH_AUDIT_WEBHOOK_ALLOW_PRIVATE). */
export const ALLOW_EVERYTHING: AllowList = parseAllowList(['0.0.0.0/0', '::/0', '127.0.0.0/8', '::1'], 'ALLOW_EVERYTHING');

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
    // Loopback's own addresses are judged as loopback (NARROW_RANGES), not as this host's.
    for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) if (!a.internal) addresses.add(canonicalAddress(a.address).address);
    ownAddresses = { at: Date.now(), addresses };
  }
  return ownAddresses.addresses;
}

/**
 * Why `address` may not be connected to, or undefined when it may. `named`: the address is what an
 * allowlisted host name resolved to, which opens every range but link-local, the metadata addresses and
 * this host's own addresses.
 */
export function deniedReason(address: string, allow: AllowList = EMPTY_ALLOW_LIST, { named = false } = {}): string | undefined {
  const { address: checked, family } = canonicalAddress(address);
  if (!isIP(checked)) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const exactly = namedExactly(checked, allow);
  const metadata = METADATA_ADDRESSES.get(checked);
  if (metadata) return exactly ? undefined : metadata;
  if (hostAddresses().has(checked)) return exactly ? undefined : 'an address of this host';
  const narrow = NARROW.find((r) => r.family === family && r.list.check(checked, type));
  if (narrow) {
    const inside = allow.entries.some(
      (e) => e.family === family && e.prefix >= narrow.bits && narrow.list.check(e.address, type) && e.list.check(checked, type),
    );
    return inside || (named && narrow.why === 'loopback') ? undefined : narrow.why;
  }
  if (named || allow.networks.check(checked, type)) return undefined;
  return (family === 4 ? V4 : V6).find(({ list }) => list.check(checked, type))?.why;
}

/** Whether an address is this host's loopback or unspecified address (where a connection's two ends share an address). */
export function isLoopback(address: string): boolean {
  const { address: checked, family } = canonicalAddress(address);
  return NARROW.some((r) => r.why !== 'link-local (cloud metadata)' && r.family === family && r.list.check(checked, family === 4 ? 'ipv4' : 'ipv6'));
}

/** Whether an allowlist entry names exactly this address (a single-address entry). */
export function namedExactly(address: string, allow: AllowList): boolean {
  const { address: checked, family } = canonicalAddress(address);
  return allow.entries.some((e) => e.prefix === (family === 4 ? 32 : 128) && e.list.check(checked, family === 4 ? 'ipv4' : 'ipv6'));
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
