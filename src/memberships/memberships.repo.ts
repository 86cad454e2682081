import type { Selectable } from 'kysely';
import type { Role } from '../platform/auth/roles.ts';
import type { MembershipsTable, UsersTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { Membership } from './memberships.schema.ts';

const MEMBERSHIP_COLUMNS = [
  'memberships.id',
  'memberships.organization_id',
  'memberships.user_id',
  'memberships.role',
  'memberships.invited_email',
  'memberships.invitation_id',
  'memberships.created_at',
  'memberships.updated_at',
  'users.email',
  'users.full_name',
  'users.short_name',
] as const;

/** A membership with the columns of its user a Membership shows (a read-only join: pages of members stay one query). */
export type MembershipRow = Selectable<MembershipsTable> & Pick<Selectable<UsersTable>, 'email' | 'full_name' | 'short_name'>;

export function membershipRowToMembership(row: MembershipRow): Membership {
  return {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    email: row.email,
    role: row.role,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.full_name ? { fullName: row.full_name } : {}),
    ...(row.short_name ? { shortName: row.short_name } : {}),
    ...(row.invited_email ? { invitedEmail: row.invited_email } : {}),
    ...(row.invitation_id ? { invitationId: row.invitation_id } : {}),
  };
}

function selectMemberships(db: Executor) {
  return db.selectFrom('memberships').innerJoin('users', 'users.id', 'memberships.user_id').select(MEMBERSHIP_COLUMNS);
}

export function insertMembership(
  db: Executor,
  values: { id: string; organizationId: string; userId: string; role: Role; invitedEmail?: string; invitationId?: string },
) {
  return db
    .insertInto('memberships')
    .values({
      id: values.id,
      organization_id: values.organizationId,
      user_id: values.userId,
      role: values.role,
      invited_email: values.invitedEmail ?? null,
      invitation_id: values.invitationId ?? null,
    })
    .onConflict((oc) => oc.columns(['organization_id', 'user_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
}

export function findMembershipById(db: Executor, organizationId: string, id: string): Promise<MembershipRow | undefined> {
  return selectMemberships(db).where('memberships.organization_id', '=', organizationId).where('memberships.id', '=', id).executeTakeFirst();
}

export function findMembershipOfUser(db: Executor, organizationId: string, userId: string) {
  return db.selectFrom('memberships').select(['id', 'role']).where('organization_id', '=', organizationId).where('user_id', '=', userId).executeTakeFirst();
}

export function findMembershipsPage(db: Executor, organizationId: string, page: PageRequest): Promise<MembershipRow[]> {
  return selectMemberships(db).where('memberships.organization_id', '=', organizationId).$call(keyset(page, 'memberships.id')).execute();
}

/** Locks the organization's OWNER memberships, so two concurrent demotions cannot both pass the last-owner check. */
export async function lockOwnerIds(db: Executor, organizationId: string): Promise<string[]> {
  const rows = await db.selectFrom('memberships').select('id').where('organization_id', '=', organizationId).where('role', '=', 'OWNER').forUpdate().execute();
  return rows.map((r) => r.id);
}

export function updateMembershipRole(db: Executor, id: string, role: Role) {
  return db.updateTable('memberships').set({ role, updated_at: new Date() }).where('id', '=', id).execute();
}

export function deleteMembershipById(db: Executor, id: string) {
  return db.deleteFrom('memberships').where('id', '=', id).execute();
}
