import { sql, type Selectable } from 'kysely';
import type { ModuleDefinitionsTable, ModuleVersionsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';

/** What the module registry serves of a version: only the archive's route reads its bytes. */
export type RegistryArchiveRow = Pick<Selectable<ModuleVersionsTable>, 'archive' | 'archive_sha256'>;

/**
 * The definition an organization's namespace serves for a type: its own, else the global one (an
 * organization's definition of a type shadows the global definition of that type).
 */
export function findServedDefinition(db: Executor, organizationId: string, type: string): Promise<Pick<Selectable<ModuleDefinitionsTable>, 'id'> | undefined> {
  return db
    .selectFrom('module_definitions')
    .select('id')
    .where('type', '=', type)
    .where((eb) => eb.or([eb('organization_id', '=', organizationId), eb('organization_id', 'is', null)]))
    .orderBy(sql`organization_id is null`)
    .limit(1)
    .executeTakeFirst();
}

/** The version strings of a definition, oldest first: each is newer than the one before (migration 0017), so also version order. */
export async function findServedVersions(db: Executor, definitionId: string): Promise<string[]> {
  const rows = await db.selectFrom('module_versions').select('version').where('module_definition_id', '=', definitionId).orderBy('id').execute();
  return rows.map((r) => r.version);
}

export function findServedVersion(db: Executor, definitionId: string, version: string): Promise<Pick<Selectable<ModuleVersionsTable>, 'id'> | undefined> {
  return db.selectFrom('module_versions').select('id').where('module_definition_id', '=', definitionId).where('version', '=', version).executeTakeFirst();
}

export function findArchive(db: Executor, versionId: string): Promise<RegistryArchiveRow | undefined> {
  return db.selectFrom('module_versions').select(['archive', 'archive_sha256']).where('id', '=', versionId).executeTakeFirst();
}
