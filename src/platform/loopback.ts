import { BlockList, isIP } from 'node:net';
import { bareHost, canonicalAddress } from './outbound/address-forms.ts';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * isLoopbackHost tells whether a host as written in a URL or a setting names this machine's loopback:
 * `localhost`, an address in 127.0.0.0/8, or ::1 (IPv4-mapped forms included). Any other name is not
 * loopback, whatever it resolves to today: DNS can change, and the unspecified addresses (0.0.0.0, ::)
 * listen on every interface.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = bareHost(host).replace(/\.$/, '');
  if (bare === 'localhost') return true;
  const { address, family } = canonicalAddress(bare);
  if (!isIP(address)) return false;
  return LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6');
}
