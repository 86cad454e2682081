// The written forms of an address: pure functions, with nothing built when the module loads, so what
// only needs them (the CLI's loopback check) starts without the egress policy's address lists.

import { isIP } from 'node:net';

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
export function expandIPv6(v6: string): number[] | undefined {
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

/** A host as written in a URL or an authority, without IPv6 brackets, in lower case. */
export function bareHost(host: string): string {
  return host.replace(/^\[|\]$/g, '').toLowerCase();
}
