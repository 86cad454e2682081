import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { DefaultValue, ParentType } from './default-values.schema.ts';

export interface DefaultValueRow {
  id: string;
  organization_id: string;
  default_value_definition_id: string;
  parent_id: string;
  parent_type: string;
  value: unknown;
  created_at: Date;
  updated_at: Date;
}

export function defaultValueRowToDefaultValue(row: DefaultValueRow): DefaultValue {
  return {
    id: row.id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    organizationId: row.organization_id,
    defaultValueDefinitionId: row.default_value_definition_id,
    parentId: row.parent_id,
    parentType: row.parent_type as ParentType,
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
    .executeTakeFirstOrThrow() as Promise<DefaultValueRow>;
}

export function findDefaultValueById(db: Executor, organizationId: string, id: string) {
  return db.selectFrom('default_values').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst() as Promise<
    DefaultValueRow | undefined
  >;
}

export function findDefaultValuesPage(db: Executor, organizationId: string, page: PageRequest, filter: { definitionId?: string; parentId?: string }) {
  let query = db.selectFrom('default_values').selectAll().where('organization_id', '=', organizationId);
  if (filter.definitionId !== undefined) query = query.where('default_value_definition_id', '=', filter.definitionId);
  if (filter.parentId !== undefined) query = query.where('parent_id', '=', filter.parentId);
  return query.$call(keyset(page, 'default_values.id')).execute() as Promise<DefaultValueRow[]>;
}

/** The values of one definition, in id order, `limit` at a time after `afterId`: for re-validating them all. */
export function findDefinitionValuesBatch(db: Executor, definitionId: string, afterId: string | undefined, limit: number) {
  let query = db.selectFrom('default_values').selectAll().where('default_value_definition_id', '=', definitionId);
  if (afterId !== undefined) query = query.where('id', '>', afterId);
  return query.orderBy('id').limit(limit).execute() as Promise<DefaultValueRow[]>;
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
    .executeTakeFirstOrThrow() as Promise<DefaultValueRow>;
}

export function deleteDefaultValueById(db: Executor, id: string) {
  return db.deleteFrom('default_values').where('id', '=', id).execute();
}

export function deleteDefaultValuesOfDefinition(db: Executor, definitionId: string) {
  return db.deleteFrom('default_values').where('default_value_definition_id', '=', definitionId).execute();
}

/** Values set on a project or environment go with it: nothing else refers to them. */
export function deleteDefaultValuesOfParent(db: Executor, parentId: string) {
  return db.deleteFrom('default_values').where('parent_id', '=', parentId).execute();
}

/**
 * What kind of scope an id is in the organization, or undefined when it is none of them there. The row
 * is locked `for key share`, so a project or environment being deleted meanwhile (it locks `for update`)
 * either waits for this value to exist and deletes it too, or is gone before it is looked up.
 */
export async function lockParent(db: Executor, organizationId: string, parentId: string): Promise<ParentType | undefined> {
  if (parentId === organizationId) {
    const org = await db.selectFrom('organizations').select('id').where('id', '=', parentId).forKeyShare().executeTakeFirst();
    return org ? 'ORGANIZATION' : undefined;
  }
  const project = await db
    .selectFrom('projects')
    .select('id')
    .where('id', '=', parentId)
    .where('organization_id', '=', organizationId)
    .forKeyShare()
    .executeTakeFirst();
  if (project) return 'PROJECT';
  const environment = await db
    .selectFrom('environments')
    .select('id')
    .where('id', '=', parentId)
    .where('organization_id', '=', organizationId)
    .forKeyShare()
    .executeTakeFirst();
  return environment ? 'ENVIRONMENT' : undefined;
}

/** The values of the given definitions set on any of the scopes (an environment, its project, the organization). */
export function findValuesForScopes(db: Executor, organizationId: string, definitionIds: string[], scopeIds: string[]) {
  if (definitionIds.length === 0) return Promise.resolve([] as DefaultValueRow[]);
  return db
    .selectFrom('default_values')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('default_value_definition_id', 'in', definitionIds)
    .where('parent_id', 'in', scopeIds)
    .execute() as Promise<DefaultValueRow[]>;
}
