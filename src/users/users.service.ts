import type { Principal } from '../platform/auth/principal.ts';
import { assertPermission } from '../platform/auth/roles.ts';
import type { Db } from '../platform/db/db.ts';
import { ForbiddenError, NotFoundError } from '../platform/errors.ts';
import { findMembershipOfUser } from '../memberships/memberships.repo.ts';
import { findUserById, userRowToUser } from './users.repo.ts';
import type { UserAuthSettings } from './users.schema.ts';

export async function getCurrentUser(db: Db, principal: Principal) {
  if (principal.principalType !== 'MEMBERSHIP') {
    throw new ForbiddenError('A service account is not a user; use GET /auth/whoami', 'Auth:Principal:NOT_A_USER');
  }
  const user = await findUserById(db, principal.userId);
  if (!user) throw new NotFoundError('User', principal.userId);
  return userRowToUser(user);
}

/**
 * getUserAuthSettings tells how a user can sign in. A user may read their own; an ADMIN or higher may
 * read those of members of the organization the request acts in. Anyone else is told it doesn't exist.
 */
export async function getUserAuthSettings(db: Db, principal: Principal, userId: string): Promise<UserAuthSettings> {
  const isSelf = principal.principalType === 'MEMBERSHIP' && principal.userId === userId;
  if (!isSelf) {
    const membership = principal.isSuperAdmin ? true : await findMembershipOfUser(db, principal.organizationId, userId);
    if (!membership) throw new NotFoundError('User', userId);
    assertPermission(principal.role, 'membership:manage');
  }
  const user = await findUserById(db, userId);
  if (!user) throw new NotFoundError('User', userId);
  // Plinth signs users in with API keys only; no external identity provider is connected yet.
  return { hasPassword: user.password_hash !== null, identityProviders: [] };
}
