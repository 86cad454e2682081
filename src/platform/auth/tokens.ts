import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const TOKEN_PREFIX = 'plk_';
/** Run credentials, minted by a worker for one OpenTofu step, read apart from API keys: the state backend resolves them against their run. */
export const RUN_TOKEN_PREFIX = 'plr_';

/** A new API token: the fixed prefix and 256 random bits, base64url. Shown once, never stored. */
export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The first characters of a token, kept so a user can tell keys apart without the secret. */
export function tokenDisplayPrefix(token: string): string {
  return token.slice(0, TOKEN_PREFIX.length + 6);
}

/** Compares a presented token with a stored hash in constant time. */
export function tokenMatches(token: string, storedHash: string): boolean {
  const presented = Buffer.from(hashToken(token), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

/**
 * The token a request presents: a Bearer token, or the password of HTTP Basic (how OpenTofu's http
 * backend sends it; the user name is not read). Undefined when the header is neither.
 */
export function presentedToken(header: string | undefined): string | undefined {
  const match = /^(Bearer|Basic)\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  if (match[1].toLowerCase() === 'bearer') return match[2];
  const decoded = Buffer.from(match[2], 'base64').toString('utf8');
  return decoded.slice(decoded.indexOf(':') + 1);
}
