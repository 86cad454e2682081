import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { UsageRow } from '../projects/in-use.ts';
import type { CloudAccount } from './cloud-accounts.schema.ts';

export interface CloudAccountRow {
  id: string;
  organization_id: string;
  given_id: string;
  name: string;
  provider: string;
  account_id: string;
  role_arn: string;
  external_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export function cloudAccountRowToCloudAccount(row: CloudAccountRow): CloudAccount {
  return {
    id: row.id,
    organizationId: row.organization_id,
    givenId: row.given_id,
    name: row.name,
    provider: row.provider as CloudAccount['provider'],
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
    .executeTakeFirstOrThrow() as Promise<CloudAccountRow>;
}

export function findCloudAccountById(db: Executor, organizationId: string, id: string, lock = false) {
  let query = db.selectFrom('cloud_accounts').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst() as Promise<CloudAccountRow | undefined>;
}

export function findCloudAccountsPage(db: Executor, organizationId: string, page: PageRequest) {
  return db
    .selectFrom('cloud_accounts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .$call(keyset(page, 'cloud_accounts.id'))
    .execute() as Promise<CloudAccountRow[]>;
}

export function updateCloudAccount(db: Executor, id: string, changes: { name?: string; role_arn?: string; external_id?: string | null }) {
  return db
    .updateTable('cloud_accounts')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow() as Promise<CloudAccountRow>;
}

export function deleteCloudAccountById(db: Executor, id: string) {
  return db.deleteFrom('cloud_accounts').where('id', '=', id).execute();
}

/** The execution environments that still run in this account. */
export async function findCloudAccountUsers(db: Executor, id: string, sample = 10): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('execution_environments')
    .select('given_id')
    .where('cloud_account_id', '=', id)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'execution environments', ref: r.given_id }));
}
