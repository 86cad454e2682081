/** Field names whose values never go into the audit log (a token, a password, a secret, a private key). */
const SECRET_NAME = /token|secret|password|passphrase|private|credential|authorization|cookie|(^|_|-)key$|apikey$/i;

/** Past this size a diff keeps only its top-level field names. */
const MAX_DIFF_BYTES = 16 * 1024;

export const REDACTED = '[REDACTED]';

function redactValue(value: unknown, depth: number): unknown {
  if (depth > 32) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  if (!value || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  // A variable marked sensitive keeps its name but not its value.
  const sensitive = object.sensitive === true;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(object)) {
    out[k] = SECRET_NAME.test(k) || (sensitive && k === 'value') ? REDACTED : redactValue(v, depth + 1);
  }
  return out;
}

/**
 * redactedDiff is what a request asked to change, as the audit log keeps it: the body's `data` (or the
 * body), every secret-named field and sensitive value replaced by `[REDACTED]`, and cut down to its
 * field names when large. Undefined when the request had no body.
 */
export function redactedDiff(body: unknown): unknown {
  if (body === undefined || body === null) return undefined;
  const data = typeof body === 'object' && !Array.isArray(body) && 'data' in body ? (body as { data: unknown }).data : body;
  const redacted = redactValue(data, 0);
  if (JSON.stringify(redacted).length <= MAX_DIFF_BYTES) return redacted;
  return { truncated: true, fields: redacted && typeof redacted === 'object' ? Object.keys(redacted).slice(0, 100) : [] };
}
