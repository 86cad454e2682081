// Looking up a domain's verification record, with the resolvers the operator chose.

import { Resolver } from 'node:dns/promises';

/** Per query: two tries of two seconds, so a check never holds a worker long. */
const RESOLVER_OPTIONS = { timeout: 2000, tries: 2 };

export type TxtCheck = { found: true } | { found: false; message: string };

/** hasTxtRecord says whether `name` has a TXT record whose value is exactly `value`. */
export async function hasTxtRecord(servers: string[], name: string, value: string): Promise<TxtCheck> {
  const resolver = new Resolver(RESOLVER_OPTIONS);
  if (servers.length > 0) resolver.setServers(servers);
  try {
    const records = await resolver.resolveTxt(name);
    // A long TXT value arrives in strings of up to 255 characters each: they are one value.
    if (records.some((chunks) => chunks.join('') === value)) return { found: true };
    return { found: false, message: `${name} has ${records.length} TXT record(s), none of them "${value}"` };
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'ERROR';
    return { found: false, message: code === 'ENOTFOUND' || code === 'ENODATA' ? `${name} has no TXT record yet` : `looking up ${name} failed: ${code}` };
  } finally {
    resolver.cancel();
  }
}
