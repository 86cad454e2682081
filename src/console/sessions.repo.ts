import { sql } from 'kysely';
import type { Db, Executor } from '../platform/db/db.ts';

export interface SessionRow {
  token_hash: string;
  api_key_id: string;
  principal_id: string;
  principal_type: 'MEMBERSHIP' | 'SERVICE_ACCOUNT';
  sealed_key: string;
  organization_id: string;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  minted_key: boolean;
}

export interface NewSession {
  tokenHash: string;
  apiKeyId: string;
  principalId: string;
  principalType: 'MEMBERSHIP' | 'SERVICE_ACCOUNT';
  sealedKey: string;
  organizationId: string;
  expiresAt: Date;
  /** The key was minted for the session (a Git sign-in): signing out revokes it. */
  mintedKey: boolean;
}

export async function insertSession(db: Executor, session: NewSession): Promise<void> {
  await db
    .insertInto('console_sessions')
    .values({
      token_hash: session.tokenHash,
      api_key_id: session.apiKeyId,
      principal_id: session.principalId,
      principal_type: session.principalType,
      sealed_key: session.sealedKey,
      organization_id: session.organizationId,
      expires_at: session.expiresAt,
      minted_key: session.mintedKey,
    })
    .execute();
}

/** The session, unless it has passed its absolute expiry or has been idle for `idleMs`. */
export async function findLiveSession(db: Executor, tokenHash: string, idleMs: number): Promise<SessionRow | undefined> {
  return db
    .selectFrom('console_sessions')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', sql<Date>`now()`)
    .where('last_seen_at', '>', sql<Date>`now() - make_interval(secs => ${idleMs / 1000})`)
    .executeTakeFirst() as Promise<SessionRow | undefined>;
}

export async function touchSession(db: Executor, tokenHash: string): Promise<void> {
  await db.updateTable('console_sessions').set({ last_seen_at: sql`now()` }).where('token_hash', '=', tokenHash).execute();
}

/** Ends a session; the key minted for it, if any, is returned to be deleted. */
export async function deleteSession(db: Executor, tokenHash: string): Promise<string[]> {
  const rows = await db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).returning(['api_key_id', 'minted_key']).execute();
  return mintedKeysOf(rows);
}

/**
 * Ends every session of a principal; with `mintedIn`, only the Git sign-ins' sessions of that
 * organization (the only ones such a session may end). The keys minted for them are returned to be deleted.
 */
export async function deletePrincipalSessions(db: Executor, principalId: string, mintedIn?: string): Promise<string[]> {
  let query = db.deleteFrom('console_sessions').where('principal_id', '=', principalId);
  if (mintedIn) query = query.where('organization_id', '=', mintedIn).where('minted_key', '=', true);
  return mintedKeysOf(await query.returning(['api_key_id', 'minted_key']).execute());
}

const mintedKeysOf = (rows: { api_key_id: string; minted_key: boolean }[]) => rows.filter((r) => r.minted_key).map((r) => r.api_key_id);

/**
 * Removes the sessions that have ended, and the principal's oldest beyond `keep`: a key's holder cannot
 * grow the table by signing in again and again. The keys minted for them are returned to be deleted.
 */
export async function pruneSessions(db: Db, principalId: string, idleMs: number, keep: number, mintedIn?: string): Promise<string[]> {
  const rows = await db
    .deleteFrom('console_sessions')
    .where((eb) =>
      eb.or([
        eb('expires_at', '<=', sql<Date>`now()`),
        eb('last_seen_at', '<=', sql<Date>`now() - make_interval(secs => ${idleMs / 1000})`),
        eb(
          'token_hash',
          'in',
          eb
            .selectFrom('console_sessions')
            .select('token_hash')
            .where('principal_id', '=', principalId)
            // A Git sign-in ends only Git sign-ins of its organization (see deletePrincipalSessions).
            .$if(mintedIn !== undefined, (q) => q.where('organization_id', '=', mintedIn!).where('minted_key', '=', true))
            .orderBy('created_at', 'desc')
            .offset(keep),
        ),
      ]),
    )
    .returning(['api_key_id', 'minted_key'])
    .execute();
  return mintedKeysOf(rows);
}
