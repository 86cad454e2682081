// Hostnames a domain may name, and the DNS record that proves the organization controls one. Pure.

/** A DNS name of two labels or more (a leading `*.` for a wildcard certificate), lower-case, no trailing dot. */
export function hostnameProblem(hostname: string): string | undefined {
  if (hostname.length > 253) return 'is longer than 253 characters';
  const labels = (hostname.startsWith('*.') ? hostname.slice(2) : hostname).split('.');
  if (labels.length < 2) return 'needs a domain and a top-level domain (example.com)';
  for (const label of labels) {
    if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(label)) return `has a label "${label}" that is not 1 to 63 lower-case letters, digits and inner hyphens`;
  }
  if (/^\d+$/.test(labels[labels.length - 1])) return 'ends in a number: an IP address is not a domain';
  return undefined;
}

/** The TXT record to create: its name (for a wildcard, the name of its parent) and the value Plinth looks for. */
export function verificationRecord(hostname: string, token: string) {
  const base = hostname.startsWith('*.') ? hostname.slice(2) : hostname;
  return { recordName: `_plinth-challenge.${base}`, recordType: 'TXT' as const, recordValue: `plinth-verification=${token}` };
}
