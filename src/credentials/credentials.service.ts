import type { Principal } from '../platform/auth/principal.ts';
import { assertPermission, hasPermission, type Role } from '../platform/auth/roles.ts';
import { generateToken, hashToken, tokenDisplayPrefix } from '../platform/auth/tokens.ts';
import type { Db } from '../platform/db/db.ts';
import { ForbiddenError, NotFoundError, RuleViolationError, UnauthenticatedError } from '../platform/errors.ts';
import { isForeignKeyViolation } from '../platform/db/db-errors.ts';
import { findMembershipOfUser } from '../memberships/memberships.repo.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { apiKeyRowToApiKey, findApiKeyById, findApiKeyByIdAnywhere, findApiKeysPage, insertApiKey, revokeApiKeyById, type ApiKeyRow } from './api-keys.repo.ts';
import type { CreateApiKey, CreateServiceAccount, UpdateServiceAccount } from './credentials.schema.ts';
import {
  deleteServiceAccountById,
  findServiceAccountById,
  findServiceAccountsPage,
  insertServiceAccount,
  serviceAccountRowToServiceAccount,
  updateServiceAccount as updateServiceAccountRow,
} from './service-accounts.repo.ts';

/** Only an OWNER may create or hold an OWNER service account: no one grants more than they have. */
function assertMayGrant(principal: Principal, role: Role | undefined) {
  assertPermission(principal.role, 'service-account:manage');
  if (role === 'OWNER') assertPermission(principal.role, 'organization:manage');
}

async function getServiceAccountRow(db: Db, principal: Principal, id: string) {
  const row = await findServiceAccountById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('ServiceAccount', id);
  return row;
}

export async function createServiceAccount(db: Db, principal: Principal, input: CreateServiceAccount) {
  assertMayGrant(principal, input.role);
  const row = await insertServiceAccount(db, { id: newId(), organizationId: principal.organizationId, name: input.name, role: input.role });
  return serviceAccountRowToServiceAccount(row);
}

export async function getServiceAccount(db: Db, principal: Principal, id: string) {
  return serviceAccountRowToServiceAccount(await getServiceAccountRow(db, principal, id));
}

export async function listServiceAccounts(db: Db, principal: Principal, page: PageRequest) {
  const { items, meta } = toPage(await findServiceAccountsPage(db, principal.organizationId, page), page, (r) => r.id);
  return { items: items.map(serviceAccountRowToServiceAccount), meta };
}

export async function updateServiceAccount(db: Db, principal: Principal, id: string, changes: UpdateServiceAccount) {
  const current = await getServiceAccountRow(db, principal, id);
  assertMayGrant(principal, current.role);
  assertMayGrant(principal, changes.role);
  return serviceAccountRowToServiceAccount(await updateServiceAccountRow(db, id, changes));
}

/** deleteServiceAccount removes the account; its keys go with it and fail on their next request. */
export async function deleteServiceAccount(db: Db, principal: Principal, id: string) {
  const current = await getServiceAccountRow(db, principal, id);
  assertMayGrant(principal, current.role);
  await deleteServiceAccountById(db, id);
}

/**
 * createApiKey issues a key, for a service account of the organization (ADMIN+), for a member of the
 * organization (super-administrators only: an invited user has no other way to get a first key), or for
 * the caller, in the organization the request acts in. The token is returned here once and only its
 * hash is kept.
 */
export async function createApiKey(db: Db, principal: Principal, input: CreateApiKey) {
  if (input.expiresAt && new Date(input.expiresAt).getTime() <= Date.now()) {
    throw new RuleViolationError('ApiKey', 'INVALID_EXPIRY', 'expiresAt must be in the future', ['data/expiresAt: is in the past']);
  }
  if (input.serviceAccountId && input.userId) {
    throw new RuleViolationError('ApiKey', 'AMBIGUOUS_OWNER', 'Give serviceAccountId or userId, not both', ['data: both serviceAccountId and userId']);
  }
  let owner: { userId?: string; serviceAccountId?: string };
  if (input.userId) {
    owner = { userId: await memberForNewKey(db, principal, input.userId) };
  } else if (input.serviceAccountId) {
    const account = await getServiceAccountRow(db, principal, input.serviceAccountId);
    assertMayGrant(principal, account.role);
    owner = { serviceAccountId: account.id };
  } else if (principal.principalType === 'SERVICE_ACCOUNT') {
    owner = { serviceAccountId: principal.serviceAccountId };
  } else {
    owner = { userId: principal.userId };
  }
  const token = generateToken();
  const row = await insertApiKey(db, {
    id: newId(),
    name: input.name,
    tokenHash: hashToken(token),
    tokenPrefix: tokenDisplayPrefix(token),
    organizationId: principal.organizationId,
    createdById: principal.userId,
    expiresAt: input.expiresAt,
    // A key made with a key bound to its organization is bound too: it must not reach further than its maker.
    organizationOnly: Boolean(principal.organizationOnly && owner.userId),
    // And it goes when the Git sign-in link its maker came from does: a login its user stopped trusting
    // leaves nothing made with it behind.
    gitIdentityId: principal.gitIdentityId,
    ...owner,
  }).catch((error) => {
    // The link went while this request was on its way: so did the key it came with.
    if (principal.gitIdentityId && isForeignKeyViolation(error)) throw new UnauthenticatedError('REVOKED', 'The credential has been revoked');
    throw error;
  });
  return { ...apiKeyRowToApiKey(row), token };
}

/** A key for another user: only a super-administrator issues one, and only to a member of the organization. */
async function memberForNewKey(db: Db, principal: Principal, userId: string): Promise<string> {
  const isSelf = principal.principalType === 'MEMBERSHIP' && principal.userId === userId;
  if (isSelf) return userId;
  if (!principal.isSuperAdmin) {
    throw new ForbiddenError('Only a super-administrator can issue a key for another user', 'Auth:Permission:DENIED');
  }
  if (!(await findMembershipOfUser(db, principal.organizationId, userId))) throw new NotFoundError('User', userId);
  return userId;
}

/** What a caller may see of keys: ADMIN+ sees the organization's; anyone else only their own. */
function ownKeyFilter(principal: Principal) {
  if (hasPermission(principal.role, 'service-account:manage')) return {};
  return principal.principalType === 'SERVICE_ACCOUNT' ? { serviceAccountId: principal.serviceAccountId } : { userId: principal.userId };
}

function isVisible(principal: Principal, key: { user_id: string | null; service_account_id: string | null }) {
  const filter = ownKeyFilter(principal);
  if (filter.userId) return key.user_id === filter.userId;
  if (filter.serviceAccountId) return key.service_account_id === filter.serviceAccountId;
  return true;
}

export async function listApiKeys(db: Db, principal: Principal, serviceAccountId: string | undefined, page: PageRequest) {
  const filter = { ...(serviceAccountId ? { serviceAccountId } : {}), ...ownKeyFilter(principal) };
  const { items, meta } = toPage(await findApiKeysPage(db, principal.organizationId, filter, page), page, (r) => r.id);
  return { items: items.map(apiKeyRowToApiKey), meta };
}

async function getVisibleApiKeyRow(db: Db, principal: Principal, id: string) {
  const row = await findApiKeyById(db, principal.organizationId, id);
  if (!row || !isVisible(principal, row)) throw new NotFoundError('ApiKey', id);
  return row;
}

export async function getApiKey(db: Db, principal: Principal, id: string) {
  return apiKeyRowToApiKey(await getVisibleApiKeyRow(db, principal, id));
}

function isOwnKey(principal: Principal, key: { user_id: string | null; service_account_id: string | null }) {
  if (principal.principalType === 'SERVICE_ACCOUNT') return key.service_account_id === principal.serviceAccountId;
  return key.user_id === principal.userId;
}

/**
 * Who may revoke a key (docs/api-conventions.md, "Credentials and tenancy"): its owner, from any
 * organization; a service account's key, whoever may manage that account (ADMIN+, OWNER for an OWNER
 * account); another user's key, a super-administrator only. A user key acts in every organization its
 * user belongs to, so no organization's ADMIN or OWNER may revoke it: they end a member's access to
 * their own organization by removing the membership, which touches no other organization.
 */
async function assertMayRevoke(db: Db, principal: Principal, key: ApiKeyRow) {
  if (key.service_account_id) {
    const account = await findServiceAccountById(db, principal.organizationId, key.service_account_id);
    if (!account) throw new NotFoundError('ApiKey', key.id);
    assertMayGrant(principal, account.role as Role);
    return;
  }
  if (!principal.isSuperAdmin) {
    throw new ForbiddenError(
      "A user's API key is revoked by that user or a super-administrator; remove the membership to end the user's access to this organization",
      'Auth:Permission:DENIED',
    );
  }
}

/** revokeApiKey takes effect on the key's very next request, in every process. Revoking twice is harmless. */
export async function revokeApiKey(db: Db, principal: Principal, id: string) {
  const own = await findApiKeyByIdAnywhere(db, id);
  // A key bound to its organization revokes only keys bound like it: the user's others reach further than it does.
  const reachable = own && (!principal.organizationOnly || (own.organization_only && own.organization_id === principal.organizationId));
  if (own && reachable && isOwnKey(principal, own)) return void (await revokeApiKeyById(db, id));
  const key = await getVisibleApiKeyRow(db, principal, id);
  await assertMayRevoke(db, principal, key);
  await revokeApiKeyById(db, id);
}
