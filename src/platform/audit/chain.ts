import { createHash } from 'node:crypto';

/** The fields of an audit row that its hash covers, in the order they are hashed. */
export interface ChainedFields {
  id: string;
  organizationId: string;
  seq: number;
  createdAt: string;
  actorType: string;
  actorId: string;
  apiKeyId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  outcome: string;
  statusCode: number | null;
  errorCode: string | null;
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  diff: unknown;
}

/** JSON with object keys sorted at every depth: jsonb reorders keys, so the hash must not depend on order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * chainHash is a row's hash: SHA-256 over the previous row's hash and the row's fields. Changing any
 * field of a row, or removing or reordering rows, breaks the chain from that row on.
 */
export function chainHash(prevHash: string, f: ChainedFields): string {
  const { before, after } = chainHashParts(f);
  return createHash('sha256').update(`${prevHash}\n${before}${f.seq}${after}`).digest('hex');
}

/**
 * The text chainHash hashes after the previous hash and a newline, either side of the row's sequence
 * number (rows written before the anchor were hashed by PostgreSQL from these two parts and the seq).
 */
export function chainHashParts(f: Omit<ChainedFields, 'seq'>): { before: string; after: string } {
  const head = [f.id, f.organizationId];
  const tail = [
    f.createdAt,
    f.actorType,
    f.actorId,
    f.apiKeyId,
    f.action,
    f.resourceType,
    f.resourceId,
    f.outcome,
    f.statusCode,
    f.errorCode,
    f.requestId,
    f.ip,
    f.userAgent,
    f.diff ?? null,
  ];
  const before = canonicalJson(head);
  const after = canonicalJson(tail);
  return { before: `${before.slice(0, -1)},`, after: `,${after.slice(1)}` };
}
