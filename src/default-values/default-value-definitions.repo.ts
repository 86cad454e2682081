import { sql, type Selectable } from 'kysely';
import type { DefaultValueDefinitionsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import type { CreatedByType } from '../platform/db/enums.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { InputProperty } from '../inputs/inputs.schema.ts';
import type { DefaultValueDefinition } from './default-value-definitions.schema.ts';

export type DefinitionRow = Selectable<DefaultValueDefinitionsTable>;

export function definitionRowToDefinition(row: DefinitionRow): DefaultValueDefinition {
  return {
    id: row.id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    organizationId: row.organization_id,
    givenId: row.given_id,
    name: row.name,
    schema: row.schema as InputProperty,
    createdByType: row.created_by_type,
    ...(row.description !== null ? { description: row.description } : {}),
  };
}

export interface NewDefinition {
  id: string;
  organizationId: string;
  givenId: string;
  name: string;
  description?: string;
  schema: InputProperty;
  createdByType: CreatedByType;
}

function definitionValues(v: NewDefinition) {
  return {
    id: v.id,
    organization_id: v.organizationId,
    given_id: v.givenId,
    name: v.name,
    description: v.description ?? null,
    schema: JSON.stringify(v.schema),
    created_by_type: v.createdByType,
  };
}

export function insertDefinition(db: Executor, v: NewDefinition) {
  return db.insertInto('default_value_definitions').values(definitionValues(v)).returningAll().executeTakeFirstOrThrow();
}

/** Inserts a definition unless the organization already has that givenId (seeding is idempotent). */
export function insertDefinitionIfAbsent(db: Executor, v: NewDefinition) {
  return db
    .insertInto('default_value_definitions')
    .values(definitionValues(v))
    .onConflict((oc) => oc.columns(['organization_id', 'given_id']).doNothing())
    .execute();
}

/** `lock`: `update` for a change that must see every value, `share` for a value write that validates against the schema. */
export function findDefinitionById(db: Executor, organizationId: string, id: string, lock?: 'update' | 'share') {
  let query = db.selectFrom('default_value_definitions').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock === 'update') query = query.forUpdate();
  if (lock === 'share') query = query.forShare();
  return query.executeTakeFirst();
}

export function findDefinitionsByGivenIds(db: Executor, organizationId: string, givenIds: string[]) {
  if (givenIds.length === 0) return Promise.resolve<DefinitionRow[]>([]);
  return db.selectFrom('default_value_definitions').selectAll().where('organization_id', '=', organizationId).where('given_id', 'in', givenIds).execute();
}

export function findDefinitionsPage(db: Executor, organizationId: string, page: PageRequest, givenId?: string) {
  let query = db.selectFrom('default_value_definitions').selectAll().where('organization_id', '=', organizationId);
  if (givenId !== undefined) query = query.where('given_id', '=', givenId);
  return query.$call(keyset(page, 'default_value_definitions.id')).execute();
}

export function updateDefinition(db: Executor, id: string, changes: { name?: string; description?: string; schema?: InputProperty }) {
  return db
    .updateTable('default_value_definitions')
    .set({
      name: changes.name,
      description: changes.description,
      schema: changes.schema === undefined ? undefined : JSON.stringify(changes.schema),
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function deleteDefinitionById(db: Executor, id: string) {
  return db.deleteFrom('default_value_definitions').where('id', '=', id).execute();
}

/** The definitions of the organization whose schema has a `$defaultValue` reference to `givenId`, at any depth. */
export async function findDefinitionsReferencing(db: Executor, organizationId: string, givenId: string, sample = 10) {
  const rows = await db
    .selectFrom('default_value_definitions')
    .select('given_id')
    .where('organization_id', '=', organizationId)
    .where('given_id', '<>', givenId)
    .where(sql<boolean>`jsonb_path_exists(schema, '$.** ? (@."$defaultValue" == $g)', jsonb_build_object('g', ${givenId}::text))`)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => r.given_id);
}
