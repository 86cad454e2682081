import type { Principal } from '../platform/auth/principal.ts';
import { assertPermission, type Role } from '../platform/auth/roles.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { ForbiddenError, NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { insertMembership, findMembershipOfUser } from '../memberships/memberships.repo.ts';
import { seedSystemDefinitions } from '../default-values/system-definitions.ts';
import {
  findOrganizationById,
  findOrganizationsOfUser,
  insertOrganization,
  organizationRowToOrganization,
  updateOrganization as updateOrganizationRow,
} from './organizations.repo.ts';
import type { CreateOrganization, UpdateOrganization } from './organizations.schema.ts';

/**
 * roleInOrganization is the caller's role in any organization (not only the one the request acts
 * in), or undefined when the caller may not see it at all.
 */
export async function roleInOrganization(db: Executor, principal: Principal, organizationId: string): Promise<Role | undefined> {
  if (organizationId === principal.organizationId) return principal.role;
  if (principal.principalType === 'SERVICE_ACCOUNT' || principal.organizationOnly) return undefined;
  if (principal.isSuperAdmin) return 'OWNER';
  const membership = await findMembershipOfUser(db, organizationId, principal.userId);
  return membership?.role;
}

/** createOrganization makes a new organization whose OWNER is the calling user. */
export async function createOrganization(db: Db, principal: Principal, input: CreateOrganization) {
  if (principal.principalType !== 'MEMBERSHIP') {
    throw new ForbiddenError('Only a user can create an organization', 'Auth:Principal:NOT_A_USER');
  }
  if (principal.organizationOnly) {
    throw new ForbiddenError('This key acts only in the organization it was issued in: sign in with a key of your own to create one');
  }
  return db.transaction().execute(async (trx) => {
    const org = await insertOrganization(trx, { id: newId(), name: input.name, billingEmail: input.billingEmail });
    await insertMembership(trx, { id: newId(), organizationId: org.id, userId: principal.userId, role: 'OWNER' });
    await seedSystemDefinitions(trx, org.id);
    return organizationRowToOrganization(org);
  });
}

export async function getOrganization(db: Db, principal: Principal, id: string) {
  const role = await roleInOrganization(db, principal, id);
  const org = role ? await findOrganizationById(db, id) : undefined;
  if (!org) throw new NotFoundError('Organization', id);
  return organizationRowToOrganization(org);
}

export async function listOrganizations(db: Db, principal: Principal, page: PageRequest) {
  if (principal.principalType === 'SERVICE_ACCOUNT' || principal.organizationOnly) {
    const own = await findOrganizationById(db, principal.organizationId);
    return { items: own && !page.after ? [organizationRowToOrganization(own)] : [], meta: { limit: page.limit } };
  }
  const rows = await findOrganizationsOfUser(db, principal.userId, page);
  const { items, meta } = toPage(rows, page, (r) => r.id);
  return { items: items.map(organizationRowToOrganization), meta };
}

/** updateOrganization changes the supplied fields; only an OWNER of that organization may. */
export async function updateOrganization(db: Db, principal: Principal, id: string, changes: UpdateOrganization) {
  const role = await roleInOrganization(db, principal, id);
  if (!role) throw new NotFoundError('Organization', id);
  assertPermission(role, 'organization:manage');
  // A super-administrator holds a role in every id, existing or not: the update itself says whether it exists.
  const row = await updateOrganizationRow(db, id, changes);
  if (!row) throw new NotFoundError('Organization', id);
  return organizationRowToOrganization(row);
}
