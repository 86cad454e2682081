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
    externalId: row.external_id,
    ...(row.ingest_secret_created_at !== null ? { ingestSecretCreatedAt: row.ingest_secret_created_at } : {}),
    ...(row.previous_ingest_secret_expires_at !== null && row.previous_ingest_secret_expires_at > new Date()
      ? { previousIngestSecretExpiresAt: row.previous_ingest_secret_expires_at }
      : {}),
  };
}

export function insertCloudAccount(
  db: Executor,
  v: { id: string; organizationId: string; givenId: string; name: string; accountId: string; roleArn: string; externalId: string; ingestSecretSha256: Buffer },
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
      external_id: v.externalId,
      ingest_secret_sha256: v.ingestSecretSha256,
      ingest_secret_created_at: new Date(),
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

export function updateCloudAccount(db: Executor, id: string, changes: { name?: string; role_arn?: string }) {
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

/** The account events name in their URL, with its secrets: looked up before the caller is known. */
export function findCloudAccountForIngest(db: Executor, id: string) {
  return db.selectFrom('cloud_accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** rotateIngestSecret makes `sha256` the current secret; the one it replaces stays valid until `previousExpiresAt`. */
export function rotateIngestSecret(db: Executor, organizationId: string, id: string, sha256: Buffer, previousExpiresAt: Date) {
  return db
    .updateTable('cloud_accounts')
    .set((eb) => ({
      previous_ingest_secret_sha256: eb.ref('ingest_secret_sha256'),
      previous_ingest_secret_expires_at: previousExpiresAt,
      ingest_secret_sha256: sha256,
      ingest_secret_created_at: new Date(),
      updated_at: new Date(),
    }))
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}
