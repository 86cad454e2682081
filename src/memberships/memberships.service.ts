import { findLinkedServerNames } from '../git-servers/git-identities.repo.ts';
import type { Principal } from '../platform/auth/principal.ts';
import { assertPermission, type Role } from '../platform/auth/roles.ts';
import type { Db, Trx } from '../platform/db/db.ts';
import { ConflictError, NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { findUserById, insertUserIfAbsent } from '../users/users.repo.ts';
import type { UserAuthSettings } from '../users/users.schema.ts';
import {
  deleteMembershipById,
  findMembershipById,
  findMembershipOfUser,
  findMembershipsPage,
  insertMembership,
  lockOwnerIds,
  membershipRowToMembership,
  updateMembershipRole,
} from './memberships.repo.ts';
import type { InviteMember } from './memberships.schema.ts';

/** ADMIN manages members, but only an OWNER may grant OWNER or touch an OWNER membership. */
function assertMayManage(principal: Principal, ...roles: Role[]) {
  assertPermission(principal.role, 'membership:manage');
  if (roles.includes('OWNER')) assertPermission(principal.role, 'organization:manage');
}

async function getMembershipRow(db: Db | Trx, principal: Principal, id: string) {
  const row = await findMembershipById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('Membership', id);
  return row;
}

/** An organization always keeps at least one OWNER. */
async function assertNotLastOwner(trx: Trx, organizationId: string, membershipId: string) {
  const owners = await lockOwnerIds(trx, organizationId);
  if (owners.length === 1 && owners[0] === membershipId) {
    throw new ConflictError('Membership', 'LAST_OWNER', 'The organization must keep at least one OWNER');
  }
}

/** inviteMember adds the user with that email (creating the user when new) to the organization. */
export async function inviteMember(db: Db, principal: Principal, input: InviteMember) {
  assertMayManage(principal, input.role);
  return db.transaction().execute(async (trx) => {
    const user = await insertUserIfAbsent(trx, { id: newId(), email: input.email });
    const inserted = await insertMembership(trx, {
      id: newId(),
      organizationId: principal.organizationId,
      userId: user.id,
      role: input.role,
      invitedEmail: input.email,
      invitationId: newId(),
    });
    if (!inserted) throw new ConflictError('Membership', 'ALREADY_EXISTS', `${input.email} is already a member of this organization`);
    return membershipRowToMembership((await findMembershipById(trx, principal.organizationId, inserted.id))!);
  });
}

export async function getMembership(db: Db, principal: Principal, id: string) {
  return membershipRowToMembership(await getMembershipRow(db, principal, id));
}

export async function listMemberships(db: Db, principal: Principal, page: PageRequest) {
  const { items, meta } = toPage(await findMembershipsPage(db, principal.organizationId, page), page, (r) => r.id);
  return { items: items.map(membershipRowToMembership), meta };
}

export async function changeMembershipRole(db: Db, principal: Principal, id: string, role: Role) {
  return db.transaction().execute(async (trx) => {
    const current = await getMembershipRow(trx, principal, id);
    assertMayManage(principal, current.role, role);
    if (current.role === 'OWNER' && role !== 'OWNER') await assertNotLastOwner(trx, principal.organizationId, id);
    await updateMembershipRole(trx, id, role);
    return membershipRowToMembership((await findMembershipById(trx, principal.organizationId, id))!);
  });
}

export async function removeMembership(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const current = await getMembershipRow(trx, principal, id);
    assertMayManage(principal, current.role);
    if (current.role === 'OWNER') await assertNotLastOwner(trx, principal.organizationId, id);
    await deleteMembershipById(trx, id);
  });
}

/**
 * getUserAuthSettings tells how a user can sign in (it lives here because who may read it is a rule of
 * memberships). A user may read their own; an ADMIN or higher may read those of members of the
 * organization the request acts in. Anyone else is told it doesn't exist.
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
  // The Git servers of this organization whose login signs the user in to the web console (`gitlab:<server name>`).
  return { hasPassword: user.password_hash !== null, identityProviders: await findLinkedServerNames(db, userId, principal.organizationId) };
}
