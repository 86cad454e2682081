import { sql, type Selectable } from 'kysely';
import type { JsonObject, ModuleInstancesTable, ModuleReferencesTable } from '../platform/db/database.ts';
import type { Executor, Trx } from '../platform/db/db.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { ModuleInstance, ModuleInstanceListQuery } from './module-instances.schema.ts';

export type ModuleInstanceRow = Selectable<ModuleInstancesTable> & { module_type: string; version: string };
export type ModuleReferenceRow = Selectable<ModuleReferencesTable>;

export function moduleInstanceRowToApi(row: ModuleInstanceRow): ModuleInstance {
  return {
    id: row.id,
    organizationId: row.organization_id,
    projectId: row.project_id,
    environmentId: row.environment_id,
    moduleDefinitionId: row.module_definition_id,
    moduleType: row.module_type,
    moduleVersionId: row.module_version_id,
    version: row.version,
    stackId: row.stack_id,
    givenId: row.given_id,
    name: row.name,
    values: row.values,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.applied_version_id ? { appliedVersionId: row.applied_version_id } : {}),
    ...(row.applied_at ? { appliedAt: row.applied_at } : {}),
    ...(row.deleting_run_id ? { deletingRunId: row.deleting_run_id } : {}),
  };
}

function selectInstances(db: Executor) {
  return db
    .selectFrom('module_instances as i')
    .innerJoin('module_definitions as d', 'd.id', 'i.module_definition_id')
    .innerJoin('module_versions as v', 'v.id', 'i.module_version_id')
    .selectAll('i')
    .select(['d.type as module_type', 'v.version']);
}

export function findInstance(db: Executor, organizationId: string, id: string): Promise<ModuleInstanceRow | undefined> {
  return selectInstances(db).where('i.organization_id', '=', organizationId).where('i.id', '=', id).executeTakeFirst();
}

/** lockInstance reads the instance under a row lock (its writes, deploys and delete are serialized on it). */
export function lockInstance(trx: Trx, organizationId: string, id: string): Promise<ModuleInstanceRow | undefined> {
  return selectInstances(trx).where('i.organization_id', '=', organizationId).where('i.id', '=', id).forUpdate('i').executeTakeFirst();
}

export function findInstancesPage(db: Executor, organizationId: string, filter: ModuleInstanceListQuery, page: PageRequest): Promise<ModuleInstanceRow[]> {
  let query = selectInstances(db).where('i.organization_id', '=', organizationId);
  if (filter.environmentId !== undefined) query = query.where('i.environment_id', '=', filter.environmentId);
  if (filter.moduleDefinitionId !== undefined) query = query.where('i.module_definition_id', '=', filter.moduleDefinitionId);
  if (filter.givenId !== undefined) query = query.where('i.given_id', '=', filter.givenId);
  if (filter.name !== undefined) query = query.where('i.name', '=', filter.name);
  return query.$call(keyset(page, 'i.id')).execute();
}

/** The instances of an organization by id (any environment), and of one environment by givenId: what a reference may name. */
export function findInstancesByRefs(db: Executor, organizationId: string, environmentId: string, refs: string[]): Promise<ModuleInstanceRow[]> {
  if (refs.length === 0) return Promise.resolve([]);
  return selectInstances(db)
    .where('i.organization_id', '=', organizationId)
    .where((eb) => eb.or([eb('i.id', 'in', refs), eb.and([eb('i.environment_id', '=', environmentId), eb('i.given_id', 'in', refs)])]))
    .execute();
}

export function findInstancesByIds(db: Executor, organizationId: string, ids: string[]): Promise<ModuleInstanceRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return selectInstances(db).where('i.organization_id', '=', organizationId).where('i.id', 'in', ids).execute();
}

export function findInstancesOfEnvironment(db: Executor, environmentId: string): Promise<ModuleInstanceRow[]> {
  return selectInstances(db).where('i.environment_id', '=', environmentId).orderBy('i.id').execute();
}

export async function insertInstance(
  trx: Trx,
  v: {
    id: string;
    organizationId: string;
    projectId: string;
    environmentId: string;
    definitionId: string;
    versionId: string;
    stackId: string;
    givenId: string;
    name: string;
    values: Record<string, unknown>;
  },
): Promise<void> {
  await trx
    .insertInto('module_instances')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      project_id: v.projectId,
      environment_id: v.environmentId,
      module_definition_id: v.definitionId,
      module_version_id: v.versionId,
      stack_id: v.stackId,
      given_id: v.givenId,
      name: v.name,
      values: JSON.stringify(v.values),
    })
    .execute();
}

export async function updateInstance(trx: Trx, id: string, c: { name?: string; values?: Record<string, unknown>; versionId?: string }): Promise<void> {
  await trx
    .updateTable('module_instances')
    .set({
      updated_at: sql<Date>`now()`,
      ...(c.name !== undefined ? { name: c.name } : {}),
      ...(c.values !== undefined ? { values: JSON.stringify(c.values) } : {}),
      ...(c.versionId !== undefined ? { module_version_id: c.versionId } : {}),
    })
    .where('id', '=', id)
    .execute();
}

export async function setDeletingRun(trx: Trx, id: string, runId: string | null): Promise<void> {
  await trx.updateTable('module_instances').set({ deleting_run_id: runId, updated_at: sql<Date>`now()` }).where('id', '=', id).execute();
}

/** recordInstanceApplied keeps what a successful apply of the instance's stack deployed. */
export async function recordInstanceApplied(db: Executor, stackId: string, versionId: string, values: JsonObject): Promise<void> {
  await db
    .updateTable('module_instances')
    .set({ applied_version_id: versionId, applied_values: JSON.stringify(values), applied_at: sql<Date>`now()` })
    .where('stack_id', '=', stackId)
    .execute();
}

export async function deleteInstanceById(trx: Trx, id: string): Promise<void> {
  await trx.deleteFrom('module_instances').where('id', '=', id).execute();
}

export function findReferencesOfConsumers(db: Executor, consumerIds: string[]): Promise<ModuleReferenceRow[]> {
  if (consumerIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('module_references')
    .selectAll()
    .where('consumer_instance_id', 'in', consumerIds)
    .orderBy('consumer_instance_id')
    .orderBy('input_path')
    .execute();
}

/** Every edge of an organization's graph, consumer → producer (the cycle check walks them). */
export function findOrganizationEdges(db: Executor, organizationId: string): Promise<{ consumer_instance_id: string; producer_instance_id: string | null }[]> {
  return db.selectFrom('module_references').select(['consumer_instance_id', 'producer_instance_id']).where('organization_id', '=', organizationId).execute();
}

/** The instances consuming an instance's outputs (givenIds), up to sample + 1. */
export async function findConsumersOf(db: Executor, producerId: string, sample: number): Promise<string[]> {
  const rows = await db
    .selectFrom('module_references as r')
    .innerJoin('module_instances as i', 'i.id', 'r.consumer_instance_id')
    .select('i.given_id')
    .distinct()
    .where('r.producer_instance_id', '=', producerId)
    .where('r.consumer_instance_id', '!=', producerId)
    .orderBy('i.given_id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => r.given_id);
}

export async function replaceReferences(
  trx: Trx,
  consumerId: string,
  organizationId: string,
  refs: { inputId: string; inputPath: string; producerRef: string; producerId: string | null; output: string; outputPath: string }[],
): Promise<void> {
  await trx.deleteFrom('module_references').where('consumer_instance_id', '=', consumerId).execute();
  if (refs.length === 0) return;
  await trx
    .insertInto('module_references')
    .values(
      refs.map((r) => ({
        consumer_instance_id: consumerId,
        organization_id: organizationId,
        input_id: r.inputId,
        input_path: r.inputPath,
        producer_ref: r.producerRef,
        producer_instance_id: r.producerId,
        output: r.output,
        output_path: r.outputPath,
      })),
    )
    .execute();
}

/** The instances of a definition (`<environment id>/<givenId>`): a definition is kept while any exists. */
async function findInstancesOfDefinition(db: Executor, definitionId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('module_instances')
    .select(['given_id', 'environment_id'])
    .where('module_definition_id', '=', definitionId)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'module instances', ref: `${r.environment_id}/${r.given_id}` }));
}

async function findInstancesOfEnvironmentUsage(db: Executor, environmentId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('module_instances')
    .select('given_id')
    .where('environment_id', '=', environmentId)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'module instances', ref: r.given_id }));
}

registerDependent('Environment', { findUsages: findInstancesOfEnvironmentUsage });
registerDependent('ModuleDefinition', { findUsages: findInstancesOfDefinition });
