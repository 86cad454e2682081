import type { Selectable } from 'kysely';
import type { StackStateLocksTable, StackStateVersionsTable } from '../platform/db/database.ts';
import type { Executor, Trx } from '../platform/db/db.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';

export type StateVersionRow = Selectable<StackStateVersionsTable>;
export type StateLockRow = Selectable<StackStateLocksTable>;

/** The current state of a stack: its version with the highest serial. */
export function findLatestStateVersion(db: Executor, stackId: string): Promise<StateVersionRow | undefined> {
  return db.selectFrom('stack_state_versions').selectAll().where('stack_id', '=', stackId).orderBy('serial', 'desc').limit(1).executeTakeFirst();
}

export function findStateVersion(db: Executor, stackId: string, id: string): Promise<StateVersionRow | undefined> {
  return db.selectFrom('stack_state_versions').selectAll().where('stack_id', '=', stackId).where('id', '=', id).executeTakeFirst();
}

export function findStateVersionsPage(db: Executor, stackId: string, page: PageRequest): Promise<StateVersionRow[]> {
  return db.selectFrom('stack_state_versions').selectAll().where('stack_id', '=', stackId).$call(keyset(page, 'stack_state_versions.id')).execute();
}

export async function insertStateVersion(
  trx: Trx,
  v: {
    id: string;
    organizationId: string;
    stackId: string;
    serial: number;
    lineage: string;
    md5: string;
    sizeBytes: number;
    resourceCount: number;
    sealedState: string;
    runId: string | null;
    principalId: string;
  },
): Promise<void> {
  await trx
    .insertInto('stack_state_versions')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      stack_id: v.stackId,
      serial: v.serial,
      lineage: v.lineage,
      md5: v.md5,
      size_bytes: v.sizeBytes,
      resource_count: v.resourceCount,
      sealed_state: v.sealedState,
      run_id: v.runId,
      principal_id: v.principalId,
    })
    .execute();
}

/**
 * lockStackForState takes the stack's row lock: every change of a stack's state or state lock holds it,
 * so a lock, an unlock and a write of one stack happen one at a time.
 */
export async function lockStackForState(trx: Trx, stackId: string): Promise<boolean> {
  const row = await trx.selectFrom('stacks').select('id').where('id', '=', stackId).forUpdate().executeTakeFirst();
  return row !== undefined;
}

export function findStateLock(db: Executor, stackId: string): Promise<StateLockRow | undefined> {
  return db.selectFrom('stack_state_locks').selectAll().where('stack_id', '=', stackId).executeTakeFirst();
}

export async function insertStateLock(
  trx: Trx,
  v: { stackId: string; organizationId: string; lockId: string; info: string; runId: string | null; principalId: string },
): Promise<void> {
  await trx
    .insertInto('stack_state_locks')
    .values({ stack_id: v.stackId, organization_id: v.organizationId, lock_id: v.lockId, info: v.info, run_id: v.runId, principal_id: v.principalId })
    .execute();
}

export async function deleteStateLock(trx: Trx, stackId: string): Promise<void> {
  await trx.deleteFrom('stack_state_locks').where('stack_id', '=', stackId).execute();
}

/** A stack whose current state still holds resources: deleting it would lose track of them. */
async function findResourcesOfStack(db: Executor, stackId: string): Promise<UsageRow[]> {
  const latest = await findLatestStateVersion(db, stackId);
  return latest && latest.resource_count > 0
    ? [{ kind: 'resources in its OpenTofu state (destroy them first)', ref: `${latest.resource_count} in state serial ${latest.serial}` }]
    : [];
}

registerDependent('Stack', { findUsages: findResourcesOfStack });
