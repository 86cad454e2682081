import type { Selectable } from 'kysely';
import type { ServiceAccountsTable } from '../platform/db/database.ts';
import type { Role } from '../platform/auth/roles.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { ServiceAccount } from './credentials.schema.ts';

export type ServiceAccountRow = Selectable<ServiceAccountsTable>;

export function serviceAccountRowToServiceAccount(row: ServiceAccountRow): ServiceAccount {
  return { id: row.id, organizationId: row.organization_id, name: row.name, role: row.role, createdAt: row.created_at, updatedAt: row.updated_at };
}

export function insertServiceAccount(db: Executor, values: { id: string; organizationId: string; name: string; role: Role }) {
  return db
    .insertInto('service_accounts')
    .values({ id: values.id, organization_id: values.organizationId, name: values.name, role: values.role })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findServiceAccountById(db: Executor, organizationId: string, id: string) {
  return db.selectFrom('service_accounts').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export function findServiceAccountsPage(db: Executor, organizationId: string, page: PageRequest) {
  return db.selectFrom('service_accounts').selectAll().where('organization_id', '=', organizationId).$call(keyset(page, 'id')).execute();
}

export function updateServiceAccount(db: Executor, id: string, changes: { name?: string; role?: Role }) {
  return db
    .updateTable('service_accounts')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function deleteServiceAccountById(db: Executor, id: string) {
  return db.deleteFrom('service_accounts').where('id', '=', id).execute();
}
