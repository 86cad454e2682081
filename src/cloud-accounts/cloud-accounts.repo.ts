import type { Selectable } from 'kysely';
import type { CloudAccountsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { CloudAccount } from './cloud-accounts.schema.ts';

export type CloudAccountRow = Selectable<CloudAccountsTable>;

export function cloudAccountRowToCloudAccount(row: CloudAccountRow): CloudAccount {
  return {
    id: row.id,
    organizationId: row.organization_id,
    givenId: row.given_id,
    name: row.name,
    provider: row.provider,
    accountId: row.account_id,
    roleArn: row.role_arn,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.external_id !== null ? { externalId: row.external_id } : {}),
  };
}

export function insertCloudAccount(
  db: Executor,
  v: { id: string; organizationId: string; givenId: string; name: string; accountId: string; roleArn: string; externalId?: string },
) {
  return db
    .insertInto('cloud_accounts')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      given_id: v.givenId,
      name: v.name,
      account_id: v.accountId,
      role_arn: v.roleArn,
      external_id: v.externalId ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findCloudAccountById(db: Executor, organizationId: string, id: string, lock = false) {
  let query = db.selectFrom('cloud_accounts').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

export function findCloudAccountsPage(db: Executor, organizationId: string, page: PageRequest) {
  return db.selectFrom('cloud_accounts').selectAll().where('organization_id', '=', organizationId).$call(keyset(page, 'cloud_accounts.id')).execute();
}

export function updateCloudAccount(db: Executor, id: string, changes: { name?: string; role_arn?: string; external_id?: string | null }) {
  return db
    .updateTable('cloud_accounts')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function deleteCloudAccountById(db: Executor, id: string) {
  return db.deleteFrom('cloud_accounts').where('id', '=', id).execute();
}
