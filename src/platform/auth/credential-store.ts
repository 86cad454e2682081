import type { Db } from '../db/db.ts';
import { ChannelListener } from '../db/listener.ts';
import { resolveCredential, type Principal } from './principal.ts';

/** How long a resolved credential may be served from memory, even if no change notification arrives. */
export const CREDENTIAL_CACHE_TTL_MS = 1000;
/** Most credentials (key × selected organization, and cloud accounts) one process keeps. */
export const CREDENTIAL_CACHE_MAX_ENTRIES = 10_000;
/**
 * The channel the migrations' triggers notify on any change to a credential's tables
 * (0008_credential_notify.sql, 0029_cloud_account_notify.sql).
 */
export const CREDENTIAL_CHANNEL = 'plinth_credentials';

interface Entry {
  value: unknown;
  expiresAtMs: number | null;
  cachedAtMs: number;
}

/** What a lookup found: the value to cache, and when it stops being valid whatever happens (null: never). */
interface Found<T> {
  value: T;
  expiresAtMs: number | null;
}

/**
 * CredentialStore resolves credentials from memory when it can: a bearer token to a Principal, and a
 * cloud account id to the account whose ingest secret its events are checked against. What is served
 * from memory is never older than the last change any process made to api_keys, users, memberships,
 * service_accounts, organizations or cloud_accounts, give or take notification latency
 * (milliseconds), and never older than CREDENTIAL_CACHE_TTL_MS in any case:
 * - a LISTEN connection hears the triggers' NOTIFY and empties the cache; while that connection is
 *   down, nothing is served from memory;
 * - a request during which one of those tables was written empties this process's cache before its
 *   response is sent, so the caller's next request sees the change even before the notification lands;
 * - an entry older than the TTL, or whose key has expired, is looked up again;
 * - a lookup that started before an invalidation is not cached (a generation counter).
 * Failures (401, 403, an unknown account or a wrong ingest secret) are never cached. Without a listen
 * URL, everything is looked up at each request.
 */
export class CredentialStore {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;
  private listening = false;
  private readonly listener: ChannelListener | undefined;

  constructor(
    private readonly db: Db,
    private readonly options: { listenUrl?: string; log?: { warn(obj: object, msg: string): void }; ttlMs?: number; maxEntries?: number } = {},
  ) {
    this.listener = options.listenUrl
      ? new ChannelListener({
          connectionString: options.listenUrl,
          channel: CREDENTIAL_CHANNEL,
          name: 'the credential cache (every key is looked up meanwhile)',
          log: options.log,
          onNotification: () => this.invalidate(),
          // Anything cached before this LISTEN may have missed a notification.
          onListening: () => {
            this.invalidate();
            this.listening = true;
          },
          onDown: () => {
            this.listening = false;
            this.invalidate();
          },
        })
      : undefined;
  }

  /** Starts listening for changes; resolves once the first LISTEN is in place (or failed: then it retries). */
  async start(): Promise<void> {
    await this.listener?.start();
  }

  async resolve(token: string, tokenHash: string, requestedOrgId: string | null): Promise<Principal> {
    const key = requestedOrgId === null ? `key\u0000${tokenHash}` : `key\u0000${tokenHash}\u0000${requestedOrgId}`;
    const principal = await this.remember(key, async () => {
      // A key that resolves to nothing throws (401, 403): never cached.
      const resolved = await resolveCredential(this.db, token, tokenHash, requestedOrgId);
      return { value: resolved.principal, expiresAtMs: resolved.expiresAtMs };
    });
    return { ...principal! };
  }

  /**
   * The cloud account `id`, by `lookup`, to check an event's ingest secret against. What `lookup`
   * finds is kept only once `verified` accepts it (the secret matched): a caller without the secret
   * cannot fill the cache, nor push others' keys out of it. Undefined when there is none.
   */
  async ingestAccount<T extends object>(id: string, lookup: () => Promise<T | undefined>, verified: (account: T) => boolean): Promise<T | undefined> {
    const account = await this.remember(`cloud-account\u0000${id}`, async () => {
      const found = await lookup();
      return found && verified(found) ? { value: found, expiresAtMs: null } : undefined;
    });
    return account && { ...account };
  }

  private async remember<T>(key: string, lookup: () => Promise<Found<T> | undefined>): Promise<T | undefined> {
    const now = Date.now();
    const hit = this.listening ? this.entries.get(key) : undefined;
    if (hit && now - hit.cachedAtMs < (this.options.ttlMs ?? CREDENTIAL_CACHE_TTL_MS) && (hit.expiresAtMs === null || hit.expiresAtMs > now)) {
      return hit.value as T;
    }
    if (hit) this.entries.delete(key);
    const generation = this.generation;
    const found = await lookup();
    if (found && this.listening && generation === this.generation) {
      if (this.entries.size >= (this.options.maxEntries ?? CREDENTIAL_CACHE_MAX_ENTRIES)) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { value: found.value, expiresAtMs: found.expiresAtMs, cachedAtMs: Date.now() });
    }
    return found?.value;
  }

  /** Forgets every cached credential; lookups in flight are not cached. */
  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }

  async close(): Promise<void> {
    this.listening = false;
    this.invalidate();
    await this.listener?.close();
  }
}
