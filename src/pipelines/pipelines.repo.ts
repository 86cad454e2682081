import type { Selectable } from 'kysely';
import type { PipelinesTable, PipelineVersionsTable } from '../platform/db/database.ts';
import type { Executor, Trx } from '../platform/db/db.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import { newId } from '../platform/ids.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { PipelineConfig } from './pipeline-config.ts';
import type { Pipeline, PipelineConfigBody, PipelineVersion } from './pipelines.schema.ts';
import type { NamedFilter } from '../platform/schema.ts';

/** A pipeline with the id of its latest version, which the Pipeline resource carries. */
export type PipelineRow = Selectable<PipelinesTable> & { latest_version_id: string };

export type PipelineVersionRow = Selectable<PipelineVersionsTable>;

/** The kinds of usages that keep a pipeline from being deleted; the stacks and runs repos register them (platform/db/dependents.ts). */
export const PIPELINE_USAGE = { stacks: 'stacks', activeRuns: 'active runs' } as const;

export function pipelineRowToPipeline(row: PipelineRow): Pipeline {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    latestVersion: row.latest_version,
    latestVersionId: row.latest_version_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.given_id !== null ? { givenId: row.given_id } : {}),
    ...(row.project_id !== null ? { projectId: row.project_id } : {}),
    ...(row.description !== null ? { description: row.description } : {}),
    ...(row.created_by_id !== null ? { createdById: row.created_by_id } : {}),
  };
}

export function pipelineVersionRowToPipelineVersion(row: PipelineVersionRow): PipelineVersion {
  return {
    id: row.id,
    pipelineId: row.pipeline_id,
    organizationId: row.organization_id,
    version: row.version,
    // Written only as parsePipelineConfig returned it, so it has the schema's shape.
    config: row.config as PipelineConfigBody,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.created_by_id !== null ? { createdById: row.created_by_id } : {}),
  };
}

const VERSION_COLUMNS = [
  'pipeline_versions.id',
  'pipeline_versions.organization_id',
  'pipeline_versions.pipeline_id',
  'pipeline_versions.version',
  'pipeline_versions.config',
  'pipeline_versions.created_by_id',
  'pipeline_versions.created_at',
  'pipeline_versions.updated_at',
] as const;

/** Pipelines joined to their latest version, whose id the Pipeline resource carries. */
function selectPipelines(db: Executor) {
  return db
    .selectFrom('pipelines')
    .innerJoin('pipeline_versions as latest', (join) =>
      join.onRef('latest.pipeline_id', '=', 'pipelines.id').onRef('latest.version', '=', 'pipelines.latest_version'),
    )
    .select([
      'pipelines.id',
      'pipelines.organization_id',
      'pipelines.project_id',
      'pipelines.given_id',
      'pipelines.name',
      'pipelines.description',
      'pipelines.latest_version',
      'latest.id as latest_version_id',
      'pipelines.created_by_id',
      'pipelines.created_at',
      'pipelines.updated_at',
    ]);
}

function selectVersions(db: Executor) {
  return db.selectFrom('pipeline_versions').select(VERSION_COLUMNS);
}

/**
 * insertPipelineWithFirstVersion creates a pipeline and its version 1 from an already validated
 * config (see parsePipelineConfig). The caller owns the transaction, so a stack can create its change
 * and destroy pipelines atomically with itself. A duplicate `givenId` raises the database's unique
 * violation (23505) for the caller to map.
 */
export async function insertPipelineWithFirstVersion(
  trx: Trx,
  input: {
    organizationId: string;
    projectId?: string | null;
    name: string;
    givenId?: string | null;
    description?: string | null;
    config: PipelineConfig;
    createdById?: string | null;
  },
): Promise<{ pipelineId: string; versionId: string }> {
  const pipelineId = newId();
  const versionId = newId();
  await trx
    .insertInto('pipelines')
    .values({
      id: pipelineId,
      organization_id: input.organizationId,
      project_id: input.projectId ?? null,
      given_id: input.givenId ?? null,
      name: input.name,
      description: input.description ?? null,
      latest_version: 1,
      created_by_id: input.createdById ?? null,
    })
    .execute();
  await insertPipelineVersion(trx, {
    id: versionId,
    organizationId: input.organizationId,
    pipelineId,
    version: 1,
    config: input.config,
    createdById: input.createdById ?? null,
  });
  return { pipelineId, versionId };
}

export function insertPipelineVersion(
  db: Executor,
  values: { id: string; organizationId: string; pipelineId: string; version: number; config: PipelineConfig; createdById: string | null },
) {
  return db
    .insertInto('pipeline_versions')
    .values({
      id: values.id,
      organization_id: values.organizationId,
      pipeline_id: values.pipelineId,
      version: values.version,
      config: JSON.stringify(values.config),
      created_by_id: values.createdById,
    })
    .execute();
}

/** findPipelineById reads one pipeline of the organization, with its latest version's id. */
export function findPipelineById(db: Executor, organizationId: string, id: string): Promise<PipelineRow | undefined> {
  return selectPipelines(db).where('pipelines.organization_id', '=', organizationId).where('pipelines.id', '=', id).executeTakeFirst();
}

export function findPipelinesPage(
  db: Executor,
  organizationId: string,
  filter: NamedFilter & { projectId?: string },
  page: PageRequest,
): Promise<PipelineRow[]> {
  let query = selectPipelines(db).where('pipelines.organization_id', '=', organizationId);
  if (filter.givenId !== undefined) query = query.where('pipelines.given_id', '=', filter.givenId);
  if (filter.name !== undefined) query = query.where('pipelines.name', '=', filter.name);
  if (filter.projectId !== undefined) query = query.where('pipelines.project_id', '=', filter.projectId);
  return query.$call(keyset(page, 'pipelines.id')).execute();
}

/**
 * lockPipelineById takes the pipeline's row lock for the rest of the transaction: it serializes
 * version numbering, and a run or stack inserted concurrently (their foreign keys take a key-share
 * lock on this row) waits for a delete to decide.
 */
export function lockPipelineById(trx: Trx, organizationId: string, id: string) {
  return trx
    .selectFrom('pipelines')
    .select(['id', 'latest_version'])
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export function updatePipeline(db: Executor, id: string, changes: { name?: string; description?: string | null; latestVersion?: number }) {
  return db
    .updateTable('pipelines')
    .set({
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.latestVersion !== undefined ? { latest_version: changes.latestVersion } : {}),
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .execute();
}

/** Deletes the pipelines; their versions and runs (with their step executions) go by cascade. */
export function deletePipelinesByIds(db: Executor, ids: string[]) {
  return db.deleteFrom('pipelines').where('id', 'in', ids).execute();
}

/** findLatestPipelineVersion returns the newest version of a pipeline (the one a new run uses). */
export function findLatestPipelineVersion(db: Executor, pipelineId: string): Promise<PipelineVersionRow | undefined> {
  return selectVersions(db)
    .innerJoin('pipelines', (join) =>
      join.onRef('pipelines.id', '=', 'pipeline_versions.pipeline_id').onRef('pipelines.latest_version', '=', 'pipeline_versions.version'),
    )
    .where('pipeline_versions.pipeline_id', '=', pipelineId)
    .executeTakeFirst();
}

/** findPipelineVersionById reads one version of a pipeline of the organization. */
export function findPipelineVersionById(db: Executor, organizationId: string, id: string): Promise<PipelineVersionRow | undefined> {
  return selectVersions(db).where('pipeline_versions.organization_id', '=', organizationId).where('pipeline_versions.id', '=', id).executeTakeFirst();
}

export function findPipelineVersionsPage(
  db: Executor,
  organizationId: string,
  filter: { pipelineId?: string },
  page: PageRequest,
): Promise<PipelineVersionRow[]> {
  let query = selectVersions(db).where('pipeline_versions.organization_id', '=', organizationId);
  if (filter.pipelineId !== undefined) query = query.where('pipeline_versions.pipeline_id', '=', filter.pipelineId);
  return query.$call(keyset(page, 'pipeline_versions.id')).execute();
}

/** The project's pipelines (a project with pipelines cannot be deleted). */
async function findPipelinesOfProject(db: Executor, projectId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('pipelines')
    .select(['id', 'given_id'])
    .where('project_id', '=', projectId)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'pipelines', ref: r.given_id ?? r.id }));
}

registerDependent('Project', { findUsages: findPipelinesOfProject });

/** The module instance whose stack runs the pipeline (as its change or destroy pipeline), if any. */
export async function findModuleInstanceOfPipeline(db: Executor, pipelineId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('stacks')
    .select('module_instance_id')
    .where((eb) => eb.or([eb('change_pipeline_id', '=', pipelineId), eb('destroy_pipeline_id', '=', pipelineId)]))
    .where('module_instance_id', 'is not', null)
    .executeTakeFirst();
  return row?.module_instance_id ?? undefined;
}
