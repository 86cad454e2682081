import { sql, type Selectable } from 'kysely';
import type { ModuleVersionsTable } from '../platform/db/database.ts';
import type { Executor, Trx } from '../platform/db/db.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { InputProperty } from '../inputs/inputs.schema.ts';
import type { ModuleOutput, ModuleVersion } from './module-versions.schema.ts';

/** A version without its archive, which only the module registry's download reads. */
export type ModuleVersionRow = Omit<Selectable<ModuleVersionsTable>, 'archive'>;

const COLUMNS = [
  'id',
  'module_definition_id',
  'organization_id',
  'version',
  'code_source_id',
  'ref',
  'commit_sha',
  'path',
  'inputs',
  'outputs',
  'changelog',
  'archive_sha256',
  'deprecated_at',
  'deprecation_message',
  'published_by_id',
  'created_at',
] as const;

export const inputsOf = (row: Pick<ModuleVersionRow, 'inputs'>) => row.inputs as unknown as InputProperty[];
export const outputsOf = (row: Pick<ModuleVersionRow, 'outputs'>) => row.outputs as unknown as ModuleOutput[];

export function moduleVersionRowToApi(row: ModuleVersionRow): ModuleVersion {
  return {
    id: row.id,
    moduleDefinitionId: row.module_definition_id,
    version: row.version,
    source: { codeSourceId: row.code_source_id, ref: row.ref, commitSha: row.commit_sha, path: row.path },
    inputs: inputsOf(row),
    outputs: outputsOf(row),
    changelog: row.changelog,
    deprecated: row.deprecated_at !== null,
    archiveSha256: row.archive_sha256,
    createdAt: row.created_at,
    ...(row.organization_id ? { organizationId: row.organization_id } : {}),
    ...(row.deprecated_at ? { deprecatedAt: row.deprecated_at } : {}),
    ...(row.deprecation_message ? { deprecationMessage: row.deprecation_message } : {}),
    ...(row.published_by_id ? { publishedById: row.published_by_id } : {}),
  };
}

/** Versions an organization sees: those of its own definitions and of the global ones. */
function visibleTo(db: Executor, organizationId: string) {
  return db
    .selectFrom('module_versions')
    .select(COLUMNS)
    .where((eb) => eb.or([eb('organization_id', '=', organizationId), eb('organization_id', 'is', null)]));
}

export function findVisibleVersion(db: Executor, organizationId: string, id: string): Promise<ModuleVersionRow | undefined> {
  return visibleTo(db, organizationId).where('id', '=', id).executeTakeFirst();
}

export function findVersionById(db: Executor, id: string): Promise<ModuleVersionRow | undefined> {
  return db.selectFrom('module_versions').select(COLUMNS).where('id', '=', id).executeTakeFirst();
}

export function findVersionsPage(
  db: Executor,
  organizationId: string,
  filter: { moduleDefinitionId?: string },
  page: PageRequest,
): Promise<ModuleVersionRow[]> {
  let query = visibleTo(db, organizationId);
  if (filter.moduleDefinitionId !== undefined) query = query.where('module_definition_id', '=', filter.moduleDefinitionId);
  return query.$call(keyset(page, 'module_versions.id')).execute();
}

/** The version strings and inputs of every version of a definition, oldest first (a publish checks against them). */
export function findVersionHistory(db: Executor, definitionId: string): Promise<{ id: string; version: string; inputs: unknown }[]> {
  return db.selectFrom('module_versions').select(['id', 'version', 'inputs']).where('module_definition_id', '=', definitionId).orderBy('id').execute();
}

export async function insertVersion(
  trx: Trx,
  v: {
    id: string;
    definitionId: string;
    organizationId: string | null;
    version: string;
    codeSourceId: string;
    ref: string;
    commitSha: string;
    path: string;
    inputs: InputProperty[];
    outputs: ModuleOutput[];
    changelog: string;
    archive: Buffer;
    archiveSha256: string;
    publishedById: string | null;
  },
): Promise<ModuleVersionRow> {
  return trx
    .insertInto('module_versions')
    .values({
      id: v.id,
      module_definition_id: v.definitionId,
      organization_id: v.organizationId,
      version: v.version,
      code_source_id: v.codeSourceId,
      ref: v.ref,
      commit_sha: v.commitSha,
      path: v.path,
      inputs: JSON.stringify(v.inputs),
      outputs: JSON.stringify(v.outputs),
      changelog: v.changelog,
      archive: v.archive,
      archive_sha256: v.archiveSha256,
      published_by_id: v.publishedById,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function deprecateVersion(trx: Trx, id: string, message: string | null): Promise<ModuleVersionRow> {
  return trx
    .updateTable('module_versions')
    .set({ deprecated_at: sql<Date>`coalesce(deprecated_at, now())`, deprecation_message: message })
    .where('id', '=', id)
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

/** The versions published from a code source (their definition's type and version): the code source is kept while any exists. */
async function findVersionsOfCodeSource(db: Executor, codeSourceId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('module_versions as v')
    .innerJoin('module_definitions as d', 'd.id', 'v.module_definition_id')
    .select(['d.type', 'v.version'])
    .where('v.code_source_id', '=', codeSourceId)
    .orderBy('v.id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'module versions', ref: `${r.type}@${r.version}` }));
}

registerDependent('CodeSource', { findUsages: findVersionsOfCodeSource });
