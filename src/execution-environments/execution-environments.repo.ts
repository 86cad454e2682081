import type { Selectable } from 'kysely';
import type { ExecutionEnvironmentsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import type { ExecutionEnvironmentType } from '../platform/db/enums.ts';
import type { ExecutionEnvironment } from './execution-environments.schema.ts';

export type ExecutionEnvironmentRow = Selectable<ExecutionEnvironmentsTable>;

export interface NetworkColumns {
  cloud_account_id?: string;
  region?: string;
  vpc_id?: string;
  subnet_id?: string;
  security_group_id?: string;
}

export function executionEnvironmentRowToExecutionEnvironment(row: ExecutionEnvironmentRow): ExecutionEnvironment {
  return {
    id: row.id,
    organizationId: row.organization_id,
    givenId: row.given_id,
    name: row.name,
    type: row.type,
    cloudAccountId: row.cloud_account_id ?? '',
    region: row.region ?? '',
    vpcId: row.vpc_id ?? '',
    subnetId: row.subnet_id ?? '',
    securityGroupId: row.security_group_id ?? '',
    egressAllow: row.egress_allow,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function insertExecutionEnvironment(
  db: Executor,
  v: { id: string; organizationId: string; givenId: string; name: string; type: ExecutionEnvironmentType; egressAllow: string[] | null } & NetworkColumns,
) {
  return db
    .insertInto('execution_environments')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      given_id: v.givenId,
      name: v.name,
      type: v.type,
      cloud_account_id: v.cloud_account_id ?? null,
      region: v.region ?? null,
      vpc_id: v.vpc_id ?? null,
      subnet_id: v.subnet_id ?? null,
      security_group_id: v.security_group_id ?? null,
      egress_allow: v.egressAllow,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findExecutionEnvironmentById(db: Executor, organizationId: string, id: string, lock = false) {
  let query = db.selectFrom('execution_environments').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

export function findExecutionEnvironmentsPage(db: Executor, organizationId: string, page: PageRequest, type?: ExecutionEnvironmentType) {
  let query = db.selectFrom('execution_environments').selectAll().where('organization_id', '=', organizationId);
  if (type) query = query.where('type', '=', type);
  return query.$call(keyset(page, 'execution_environments.id')).execute();
}

export function updateExecutionEnvironment(db: Executor, id: string, changes: { name?: string; egress_allow?: string[] | null } & NetworkColumns) {
  return db
    .updateTable('execution_environments')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function deleteExecutionEnvironmentById(db: Executor, id: string) {
  return db.deleteFrom('execution_environments').where('id', '=', id).execute();
}

/** The execution environments that run in the cloud account. */
async function findExecutionEnvironmentsOfCloudAccount(db: Executor, cloudAccountId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('execution_environments')
    .select('given_id')
    .where('cloud_account_id', '=', cloudAccountId)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'execution environments', ref: r.given_id }));
}

registerDependent('CloudAccount', { findUsages: findExecutionEnvironmentsOfCloudAccount });
