import type { Selectable } from 'kysely';
import type { OrganizationsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { Organization } from './organizations.schema.ts';

export type OrganizationRow = Selectable<OrganizationsTable>;

export function organizationRowToOrganization(row: OrganizationRow): Organization {
  return { id: row.id, name: row.name, billingEmail: row.billing_email, createdAt: row.created_at, updatedAt: row.updated_at };
}

export function insertOrganization(db: Executor, values: { id: string; name: string; billingEmail: string }) {
  return db
    .insertInto('organizations')
    .values({ id: values.id, name: values.name, billing_email: values.billingEmail })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findOrganizationById(db: Executor, id: string) {
  return db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
}

export function updateOrganization(db: Executor, id: string, changes: { name?: string; billingEmail?: string }) {
  return db
    .updateTable('organizations')
    .set({ name: changes.name, billing_email: changes.billingEmail, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** The organizations a user belongs to, one keyset page. */
export function findOrganizationsOfUser(db: Executor, userId: string, page: PageRequest) {
  return db
    .selectFrom('organizations')
    .selectAll('organizations')
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('memberships')
          .select('memberships.id')
          .whereRef('memberships.organization_id', '=', 'organizations.id')
          .where('memberships.user_id', '=', userId),
      ),
    )
    .$call(keyset(page, 'organizations.id'))
    .execute();
}
