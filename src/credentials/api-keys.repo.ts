import type { Selectable } from 'kysely';
import type { ApiKeysTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { ApiKey } from './credentials.schema.ts';

export type ApiKeyRow = Selectable<ApiKeysTable>;

const asDate = (value: Date | string) => (value instanceof Date ? value : new Date(value));

export function apiKeyRowToApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    organizationId: row.organization_id,
    tokenPrefix: row.token_prefix,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    organizationOnly: row.organization_only,
    ...(row.user_id ? { userId: row.user_id } : {}),
    ...(row.service_account_id ? { serviceAccountId: row.service_account_id } : {}),
    ...(row.created_by_id ? { createdById: row.created_by_id } : {}),
    ...(row.expires_at ? { expiresAt: asDate(row.expires_at) } : {}),
    ...(row.revoked_at ? { revokedAt: asDate(row.revoked_at) } : {}),
  };
}

export interface NewApiKey {
  id: string;
  name: string;
  tokenHash: string;
  tokenPrefix: string;
  organizationId: string;
  userId?: string;
  serviceAccountId?: string;
  createdById?: string;
  expiresAt?: string;
  /** The key acts only in organizationId, as a member (see the api_keys.organization_only column). */
  organizationOnly?: boolean;
  /** The Git sign-in link a session's key was minted through: the key goes when the link does. */
  gitIdentityId?: string;
}

export function insertApiKey(db: Executor, key: NewApiKey) {
  return db
    .insertInto('api_keys')
    .values({
      id: key.id,
      name: key.name,
      token_hash: key.tokenHash,
      token_prefix: key.tokenPrefix,
      organization_id: key.organizationId,
      user_id: key.userId ?? null,
      service_account_id: key.serviceAccountId ?? null,
      created_by_id: key.createdById ?? null,
      expires_at: key.expiresAt ?? null,
      organization_only: key.organizationOnly ?? false,
      git_identity_id: key.gitIdentityId ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findApiKeyByHash(db: Executor, tokenHash: string) {
  return db.selectFrom('api_keys').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export function findApiKeyById(db: Executor, organizationId: string, id: string) {
  return db.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

/** A key by id in any organization: only for its owner, who may revoke it from wherever they act. */
export function findApiKeyByIdAnywhere(db: Executor, id: string) {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A page of the organization's keys, optionally only one user's or one service account's. */
export function findApiKeysPage(db: Executor, organizationId: string, filter: { userId?: string; serviceAccountId?: string }, page: PageRequest) {
  let query = db.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId);
  if (filter.userId) query = query.where('user_id', '=', filter.userId);
  if (filter.serviceAccountId) query = query.where('service_account_id', '=', filter.serviceAccountId);
  return query.$call(keyset(page, 'id')).execute();
}

/**
 * The bootstrap key is ensured at every start: revoked, expired or moved to another owner, it is made
 * the super-administrator's working key again (PLINTH_ADMIN_TOKEN is the operator's statement that it works).
 */
export function restoreApiKey(db: Executor, id: string, userId: string) {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: null, expires_at: null, user_id: userId, service_account_id: null, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

export function revokeApiKeyById(db: Executor, id: string) {
  return db.updateTable('api_keys').set({ revoked_at: new Date(), updated_at: new Date() }).where('id', '=', id).where('revoked_at', 'is', null).execute();
}
