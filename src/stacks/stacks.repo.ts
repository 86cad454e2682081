import { sql, type Selectable } from 'kysely';
import type { JsonObject, StacksTable } from '../platform/db/database.ts';
import type { Executor, Trx } from '../platform/db/db.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import { PIPELINE_USAGE } from '../pipelines/pipelines.repo.ts';
import { PUSH_ACTIONS, type Stack, type StackSource } from './stacks.schema.ts';
import type { NamedFilter } from '../platform/schema.ts';
import { nameHolds } from '../platform/db/search.ts';

export type StackRow = Selectable<StacksTable>;

/** The stack's source as the API shows it: only the fields a StackSource has (the column holds what was written from one). */
function stackSourceOf(json: JsonObject): StackSource {
  const { codeSourceId, ref, path, onPush } = json;
  const pushAction = PUSH_ACTIONS.find((a) => a === onPush);
  return {
    ...(typeof codeSourceId === 'string' ? { codeSourceId } : {}),
    ...(typeof ref === 'string' ? { ref } : {}),
    ...(typeof path === 'string' ? { path } : {}),
    ...(pushAction ? { onPush: pushAction } : {}),
  };
}

export function stackRowToStack(row: StackRow): Stack {
  return {
    id: row.id,
    organizationId: row.organization_id,
    projectId: row.project_id,
    environmentId: row.environment_id,
    changePipelineId: row.change_pipeline_id,
    destroyPipelineId: row.destroy_pipeline_id,
    type: row.type,
    name: row.name,
    variables: row.variables,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    // The stack's workspace in Plinth's state backend, named after it: OpenTofu steps keep its state at
    // `<state backend URL>/state-backend/stack-<id>` (docs/opentofu.md).
    serviceStateBackendWorkspace: `stack-${row.id}`,
    ...(row.given_id ? { givenId: row.given_id } : {}),
    ...(row.source ? { source: stackSourceOf(row.source) } : {}),
    ...(row.first_applied_at ? { firstAppliedAt: row.first_applied_at } : {}),
    ...(row.latest_run_id ? { latestRunId: row.latest_run_id } : {}),
    ...(row.output ? { output: row.output } : {}),
    ...(row.module_instance_id ? { moduleInstanceId: row.module_instance_id } : {}),
  };
}

function selectStacks(db: Executor) {
  return db.selectFrom('stacks').selectAll();
}

export async function insertStack(
  trx: Trx,
  v: {
    id: string;
    organizationId: string;
    projectId: string;
    environmentId: string;
    givenId: string | null;
    name: string;
    source: StackSource | null;
    variables: Record<string, unknown>;
    changePipelineId: string;
    destroyPipelineId: string;
    moduleInstanceId: string | null;
  },
): Promise<void> {
  await trx
    .insertInto('stacks')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      project_id: v.projectId,
      environment_id: v.environmentId,
      given_id: v.givenId,
      name: v.name,
      source: v.source ? JSON.stringify(v.source) : null,
      variables: JSON.stringify(v.variables),
      change_pipeline_id: v.changePipelineId,
      destroy_pipeline_id: v.destroyPipelineId,
      module_instance_id: v.moduleInstanceId,
    })
    .execute();
}

export function findStackById(db: Executor, organizationId: string, id: string): Promise<StackRow | undefined> {
  return selectStacks(db).where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export function lockStackInOrg(trx: Trx, organizationId: string, id: string): Promise<StackRow | undefined> {
  return selectStacks(trx).where('organization_id', '=', organizationId).where('id', '=', id).forUpdate().executeTakeFirst();
}

export function findStacksPage(
  db: Executor,
  organizationId: string,
  filter: NamedFilter & { projectId?: string; environmentId?: string; search?: string },
  page: PageRequest,
): Promise<StackRow[]> {
  let query = selectStacks(db).where('organization_id', '=', organizationId);
  if (filter.givenId !== undefined) query = query.where('given_id', '=', filter.givenId);
  if (filter.name !== undefined) query = query.where('name', '=', filter.name);
  if (filter.projectId !== undefined) query = query.where('project_id', '=', filter.projectId);
  if (filter.environmentId !== undefined) query = query.where('environment_id', '=', filter.environmentId);
  if (filter.search !== undefined) query = query.where(nameHolds(filter.search));
  return query.$call(keyset(page, 'stacks.id')).execute();
}

export async function updateStack(db: Executor, id: string, c: { name?: string; source?: StackSource; variables?: Record<string, unknown> }): Promise<void> {
  await db
    .updateTable('stacks')
    .set({
      updated_at: sql<Date>`now()`,
      ...(c.name !== undefined ? { name: c.name } : {}),
      ...(c.source !== undefined ? { source: JSON.stringify(c.source) } : {}),
      ...(c.variables !== undefined ? { variables: JSON.stringify(c.variables) } : {}),
    })
    .where('id', '=', id)
    .execute();
}

export async function deleteStackById(trx: Trx, id: string): Promise<void> {
  await trx.deleteFrom('stacks').where('id', '=', id).execute();
}

/** The stacks of a project (its givenId, else its id). */
async function findStacksOfProject(db: Executor, projectId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('stacks')
    .select(['id', 'given_id'])
    .where('project_id', '=', projectId)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'stacks', ref: r.given_id ?? r.id }));
}

/** The stacks that live in an environment (their givenId, else their name). */
async function findStacksOfEnvironment(db: Executor, environmentId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('stacks')
    .select(['given_id', 'name'])
    .where('environment_id', '=', environmentId)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'stacks', ref: r.given_id ?? r.name }));
}

/** The stacks using a pipeline as their change or destroy pipeline (by id). */
async function findStacksOfPipeline(db: Executor, pipelineId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('stacks')
    .select('id')
    .where((eb) => eb.or([eb('change_pipeline_id', '=', pipelineId), eb('destroy_pipeline_id', '=', pipelineId)]))
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: PIPELINE_USAGE.stacks, ref: r.id }));
}

/** The stacks of an organization whose source is the code source, locked in id order (a push triggers runs of them). */
export function lockStacksOfCodeSource(trx: Trx, organizationId: string, codeSourceId: string): Promise<StackRow[]> {
  return selectStacks(trx)
    .where('organization_id', '=', organizationId)
    .where(sql<string>`source ->> 'codeSourceId'`, '=', codeSourceId)
    .orderBy('id')
    .forUpdate()
    .execute();
}

/** The stacks that check out a code source (their givenId, else their id). */
async function findStacksOfCodeSource(db: Executor, codeSourceId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('stacks')
    .select(['id', 'given_id'])
    .where(sql<string>`source ->> 'codeSourceId'`, '=', codeSourceId)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'stacks', ref: r.given_id ?? r.id }));
}

registerDependent('Project', { findUsages: findStacksOfProject });
registerDependent('CodeSource', { findUsages: findStacksOfCodeSource });
registerDependent('Environment', { findUsages: findStacksOfEnvironment });
registerDependent('Pipeline', { findUsages: findStacksOfPipeline });
