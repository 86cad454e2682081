import type { Selectable } from 'kysely';
import type { DefaultValuesTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { registerDependent } from '../platform/db/dependents.ts';
import type { ParentType } from '../platform/db/enums.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { DefaultValue } from './default-values.schema.ts';

export type DefaultValueRow = Selectable<DefaultValuesTable>;

export function defaultValueRowToDefaultValue(row: DefaultValueRow): DefaultValue {
  return {
    id: row.id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    organizationId: row.organization_id,
    defaultValueDefinitionId: row.default_value_definition_id,
    parentId: row.parent_id,
    parentType: row.parent_type,
    value: row.value,
  };
}

export function insertDefaultValue(
  db: Executor,
  v: { id: string; organizationId: string; definitionId: string; parentId: string; parentType: ParentType; value: unknown },
) {
  return db
    .insertInto('default_values')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      default_value_definition_id: v.definitionId,
      parent_id: v.parentId,
      parent_type: v.parentType,
      value: JSON.stringify(v.value),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findDefaultValueById(db: Executor, organizationId: string, id: string) {
  return db.selectFrom('default_values').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export function findDefaultValuesPage(db: Executor, organizationId: string, page: PageRequest, filter: { definitionId?: string; parentId?: string }) {
  let query = db.selectFrom('default_values').selectAll().where('organization_id', '=', organizationId);
  if (filter.definitionId !== undefined) query = query.where('default_value_definition_id', '=', filter.definitionId);
  if (filter.parentId !== undefined) query = query.where('parent_id', '=', filter.parentId);
  return query.$call(keyset(page, 'default_values.id')).execute();
}

/** The values of one definition, in id order, `limit` at a time after `afterId`: for re-validating them all. */
export function findDefinitionValuesBatch(db: Executor, definitionId: string, afterId: string | undefined, limit: number) {
  let query = db.selectFrom('default_values').selectAll().where('default_value_definition_id', '=', definitionId);
  if (afterId !== undefined) query = query.where('id', '>', afterId);
  return query.orderBy('id').limit(limit).execute();
}

export function countDefinitionValues(db: Executor, definitionId: string) {
  return db
    .selectFrom('default_values')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('default_value_definition_id', '=', definitionId)
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.count));
}

export function updateDefaultValue(db: Executor, id: string, value: unknown) {
  return db
    .updateTable('default_values')
    .set({ value: JSON.stringify(value), updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function deleteDefaultValueById(db: Executor, id: string) {
  return db.deleteFrom('default_values').where('id', '=', id).execute();
}

export function deleteDefaultValuesOfDefinition(db: Executor, definitionId: string) {
  return db.deleteFrom('default_values').where('default_value_definition_id', '=', definitionId).execute();
}

/** Values set on a project or environment go with it: nothing else refers to them. */
function deleteDefaultValuesOfParent(db: Executor, parentId: string) {
  return db.deleteFrom('default_values').where('parent_id', '=', parentId).execute();
}

registerDependent('Project', { deleteWith: deleteDefaultValuesOfParent });
registerDependent('Environment', { deleteWith: deleteDefaultValuesOfParent });

/** The values of the given definitions set on any of the scopes (an environment, its project, the organization). */
export function findValuesForScopes(db: Executor, organizationId: string, definitionIds: string[], scopeIds: string[]) {
  if (definitionIds.length === 0) return Promise.resolve<DefaultValueRow[]>([]);
  return db
    .selectFrom('default_values')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('default_value_definition_id', 'in', definitionIds)
    .where('parent_id', 'in', scopeIds)
    .execute();
}
