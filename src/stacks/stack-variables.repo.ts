import { sql, type Selectable } from 'kysely';
import type { StackSensitiveVariablesTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';

export type SensitiveVariableRow = Pick<Selectable<StackSensitiveVariablesTable>, 'stack_id' | 'name' | 'created_at' | 'updated_at'>;

/** The variables' names and times only: a sealed value is read by nothing in the API. */
export function findSensitiveVariables(db: Executor, stackId: string): Promise<SensitiveVariableRow[]> {
  return db
    .selectFrom('stack_sensitive_variables')
    .select(['stack_id', 'name', 'created_at', 'updated_at'])
    .where('stack_id', '=', stackId)
    .orderBy('name')
    .execute();
}

export async function upsertSensitiveVariable(
  db: Executor,
  v: { stackId: string; organizationId: string; name: string; sealedValue: string },
): Promise<SensitiveVariableRow> {
  return db
    .insertInto('stack_sensitive_variables')
    .values({ stack_id: v.stackId, organization_id: v.organizationId, name: v.name, sealed_value: v.sealedValue })
    .onConflict((oc) => oc.columns(['stack_id', 'name']).doUpdateSet({ sealed_value: v.sealedValue, updated_at: sql<Date>`now()` }))
    .returning(['stack_id', 'name', 'created_at', 'updated_at'])
    .executeTakeFirstOrThrow();
}

export async function deleteSensitiveVariable(db: Executor, stackId: string, name: string): Promise<boolean> {
  const result = await db.deleteFrom('stack_sensitive_variables').where('stack_id', '=', stackId).where('name', '=', name).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
