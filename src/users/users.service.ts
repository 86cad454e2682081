import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { ForbiddenError, NotFoundError } from '../platform/errors.ts';
import { findUserById, userRowToUser } from './users.repo.ts';

export async function getCurrentUser(db: Db, principal: Principal) {
  if (principal.principalType !== 'MEMBERSHIP') {
    throw new ForbiddenError('A service account is not a user; use GET /auth/whoami', 'Auth:Principal:NOT_A_USER');
  }
  const user = await findUserById(db, principal.userId);
  if (!user) throw new NotFoundError('User', principal.userId);
  return userRowToUser(user);
}
