import { sql, type Selectable } from 'kysely';
import type { ModuleDefinitionsTable } from '../platform/db/database.ts';
import type { Executor, Trx } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { ModuleDefinition, ModuleDefinitionListQuery } from './module-definitions.schema.ts';

export type ModuleDefinitionRow = Selectable<ModuleDefinitionsTable>;

export function moduleDefinitionRowToApi(row: ModuleDefinitionRow): ModuleDefinition {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    description: row.description,
    status: row.latest_version_id ? 'ACTIVE' : 'DRAFT',
    global: row.organization_id === null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.organization_id ? { organizationId: row.organization_id } : {}),
    ...(row.latest_version_id ? { latestVersionId: row.latest_version_id, latestVersion: row.latest_version ?? undefined } : {}),
  };
}

/** The definitions an organization sees: its own and the global ones. */
function visibleTo(db: Executor, organizationId: string) {
  return db
    .selectFrom('module_definitions')
    .selectAll()
    .where((eb) => eb.or([eb('organization_id', '=', organizationId), eb('organization_id', 'is', null)]));
}

export function findVisibleDefinition(db: Executor, organizationId: string, id: string): Promise<ModuleDefinitionRow | undefined> {
  return visibleTo(db, organizationId).where('id', '=', id).executeTakeFirst();
}

export function lockVisibleDefinition(trx: Trx, organizationId: string, id: string): Promise<ModuleDefinitionRow | undefined> {
  return visibleTo(trx, organizationId).where('id', '=', id).forUpdate().executeTakeFirst();
}

export function findDefinitionsPage(
  db: Executor,
  organizationId: string,
  filter: ModuleDefinitionListQuery,
  page: PageRequest,
): Promise<ModuleDefinitionRow[]> {
  let query = visibleTo(db, organizationId);
  if (filter.status === 'DRAFT') query = query.where('latest_version_id', 'is', null);
  if (filter.status === 'ACTIVE') query = query.where('latest_version_id', 'is not', null);
  if (filter.type !== undefined) query = query.where('type', '=', filter.type);
  if (filter.name !== undefined) query = query.where('name', '=', filter.name);
  return query.$call(keyset(page, 'module_definitions.id')).execute();
}

export async function insertDefinition(
  trx: Trx,
  v: { id: string; organizationId: string | null; type: string; name: string; description: string },
): Promise<ModuleDefinitionRow> {
  return trx
    .insertInto('module_definitions')
    .values({ id: v.id, organization_id: v.organizationId, type: v.type, name: v.name, description: v.description })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateDefinition(trx: Trx, id: string, c: { name?: string; description?: string }): Promise<ModuleDefinitionRow> {
  return trx
    .updateTable('module_definitions')
    .set({
      updated_at: sql<Date>`now()`,
      ...(c.name !== undefined ? { name: c.name } : {}),
      ...(c.description !== undefined ? { description: c.description } : {}),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** setLatestVersion points the definition at its newest published version (which makes it ACTIVE). */
export async function setLatestVersion(trx: Trx, id: string, versionId: string, version: string): Promise<void> {
  await trx
    .updateTable('module_definitions')
    .set({ latest_version_id: versionId, latest_version: version, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .execute();
}

export async function deleteDefinitionById(trx: Trx, id: string): Promise<void> {
  await trx.deleteFrom('module_definitions').where('id', '=', id).execute();
}
