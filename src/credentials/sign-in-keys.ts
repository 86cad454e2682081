import { generateToken, hashToken, tokenDisplayPrefix } from '../platform/auth/tokens.ts';
import type { Executor } from '../platform/db/db.ts';
import { isForeignKeyViolation } from '../platform/db/db-errors.ts';
import { ForbiddenError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { findMembershipOfUser } from '../memberships/memberships.repo.ts';
import { insertApiKey } from './api-keys.repo.ts';

/**
 * issueSignInKey mints the key a console session opened by a Git sign-in acts with, so that such a
 * session is a key's session like any other (its roles, its revocation, its audit entries). It is the
 * user's key bound to the organization of the server they signed in through, with their membership's
 * role there and nothing more: the server is that organization's, so what it vouches for must not
 * reach the user's other organizations, nor a super-administrator's powers. It is listed among the
 * user's keys under `name` and expires with the session; it is deleted when the session ends, and
 * (with its session) when the link it was minted through is.
 */
export async function issueSignInKey(db: Executor, v: { userId: string; organizationId: string; gitIdentityId: string; name: string; expiresAt: Date }) {
  if (!(await findMembershipOfUser(db, v.organizationId, v.userId))) {
    throw new ForbiddenError('You are not a member of the organization this Git server belongs to', 'Auth:Organization:FORBIDDEN');
  }
  const token = generateToken();
  const row = await insertApiKey(db, {
    id: newId(),
    name: v.name,
    tokenHash: hashToken(token),
    tokenPrefix: tokenDisplayPrefix(token),
    organizationId: v.organizationId,
    userId: v.userId,
    createdById: v.userId,
    expiresAt: v.expiresAt.toISOString(),
    organizationOnly: true,
    gitIdentityId: v.gitIdentityId,
  }).catch((error) => {
    // Unlinked between the login's answer and now.
    if (isForeignKeyViolation(error)) throw new ForbiddenError('That Git account was unlinked while signing in', 'Git:Identity:NOT_LINKED');
    throw error;
  });
  return { id: row.id, token };
}

/**
 * The keys of ended sessions go with them: each sign-in mints one, so keeping them would grow the
 * table (and the user's key list) with every sign-in. Only minted keys are ever deleted here.
 */
export async function deleteSignInKeys(db: Executor, keyIds: string[]): Promise<void> {
  if (keyIds.length === 0) return;
  await db.deleteFrom('api_keys').where('id', 'in', keyIds).where('organization_only', '=', true).execute();
}
