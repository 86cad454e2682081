import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (Git tokens, OAuth tokens, sensitive variables, state) are sealed with AES-256-GCM.
 * A sealed value is `v1.<keyId>.<base64url(iv | tag | ciphertext)>`: the key id says which key sealed
 * it, so a rotated key keeps opening what the previous one sealed. The `context` (for example
 * `code_sources.token:<id>`) is bound as additional data: a value copied onto another row fails to open.
 */
export const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const PREFIX = 'v1';

export class SecretOpenError extends Error {
  constructor(reason: string) {
    super(`a sealed secret cannot be opened: ${reason}`);
    this.name = 'SecretOpenError';
  }
}

export interface SecretKey {
  id: string;
  bytes: Buffer;
}

/** keyIdOf names a key without revealing it: the first 8 hex digits of its SHA-256. */
export function keyIdOf(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 8);
}

/**
 * parseSecretKey reads a key as written in PLINTH_SECRET_KEY or the key file: 32 bytes as 64 hex
 * digits or as base64 (either alphabet). Anything else is refused with a message that says how to make one.
 */
export function parseSecretKey(text: string, source: string): SecretKey {
  const raw = text.trim();
  let bytes: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(raw)) bytes = Buffer.from(raw, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(raw)) bytes = Buffer.from(raw.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (!bytes || bytes.length !== KEY_BYTES) {
    throw new Error(`${source} must be 32 bytes as 64 hex digits or base64 (make one with: openssl rand -base64 32)`);
  }
  return { id: keyIdOf(bytes), bytes };
}

export function generateSecretKeyText(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/** SecretBox seals with the current key and opens with the current one or any previous one. */
export class SecretBox {
  private readonly byId = new Map<string, SecretKey>();
  private readonly derived = new Map<string, SecretKey>();

  constructor(
    private readonly current: SecretKey,
    previous: SecretKey[] = [],
  ) {
    for (const key of [current, ...previous]) this.byId.set(key.id, key);
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  seal(plaintext: string | Buffer, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.bytes, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final()]);
    return `${PREFIX}.${this.current.id}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  openBytes(sealed: string, context: string): Buffer {
    const [prefix, keyId, payload, ...rest] = sealed.split('.');
    if (prefix !== PREFIX || !keyId || payload === undefined || rest.length) throw new SecretOpenError('not a sealed value');
    const key = this.byId.get(keyId);
    if (!key) throw new SecretOpenError(`sealed with key ${keyId}, which is neither PLINTH_SECRET_KEY nor in PLINTH_SECRET_KEY_PREVIOUS`);
    const bytes = Buffer.from(payload, 'base64url');
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new SecretOpenError('truncated');
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      throw new SecretOpenError('it was altered, or sealed for another record');
    }
  }

  open(sealed: string, context: string): string {
    return this.openBytes(sealed, context).toString('utf8');
  }

  /**
   * deriveKey is a key for another use than sealing (an HMAC), derived from the current key, or from
   * the current or previous key `keyId` names (undefined when none does): HKDF-SHA256 with `label` as
   * its info, so that no two uses share key bytes and the sealing key never leaves this box. It keeps
   * the key's id: what was made with a derived key says which one.
   */
  deriveKey(label: string, keyId = this.current.id): SecretKey | undefined {
    const cacheKey = `${keyId}\n${label}`;
    const cached = this.derived.get(cacheKey);
    if (cached) return cached;
    const key = this.byId.get(keyId);
    if (!key) return undefined;
    const derived = { id: key.id, bytes: Buffer.from(hkdfSync('sha256', key.bytes, Buffer.alloc(0), label, KEY_BYTES)) };
    this.derived.set(cacheKey, derived);
    return derived;
  }

  /** Whether a sealed value was made with a previous key (a rotation re-seals those). */
  isStale(sealed: string): boolean {
    return sealed.split('.')[1] !== this.current.id;
  }
}
