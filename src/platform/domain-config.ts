// How Plinth checks the domains attached to module instances (docs/domains.md#settings).

import { isIP } from 'node:net';

export interface DomainConfig {
  /** PLINTH_DNS_SERVERS: the resolvers TXT records are looked up with (ip or ip:port, comma-separated); empty: the host's. */
  dnsServers: string[];
  /** PLINTH_CLOUD_CHECK_INTERVAL_S: how often worker processes take due cloud work (domains, certificates, task definitions); 0: never. */
  checkIntervalSeconds: number;
}

export function loadDomainConfig(env: NodeJS.ProcessEnv): DomainConfig {
  const dnsServers = (env.PLINTH_DNS_SERVERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const server of dnsServers) {
    const host = server.startsWith('[') ? server.slice(1, server.indexOf(']')) : server.replace(/:\d+$/, '');
    if (!isIP(host)) throw new Error(`PLINTH_DNS_SERVERS must list IP addresses (with an optional :port), not "${server}"`);
  }
  const interval = env.PLINTH_CLOUD_CHECK_INTERVAL_S ?? '60';
  if (!/^\d+$/.test(interval)) throw new Error(`PLINTH_CLOUD_CHECK_INTERVAL_S must be a whole number of seconds, not "${interval}"`);
  return { dnsServers, checkIntervalSeconds: Number(interval) };
}
