import { sql } from 'kysely';
import type { Executor, Trx } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { Stack } from './stacks.schema.ts';

export interface StackRow {
  id: string;
  organization_id: string;
  project_id: string;
  environment_id: string;
  given_id: string | null;
  name: string;
  type: string;
  source: Stack['source'] | null;
  variables: Record<string, unknown>;
  change_pipeline_id: string;
  destroy_pipeline_id: string;
  active_run_id: string | null;
  latest_run_id: string | null;
  output: Record<string, unknown> | null;
  first_applied_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const STACK_COLUMNS = [
  'id',
  'organization_id',
  'project_id',
  'environment_id',
  'given_id',
  'name',
  'type',
  'source',
  'variables',
  'change_pipeline_id',
  'destroy_pipeline_id',
  'active_run_id',
  'latest_run_id',
  'output',
  'first_applied_at',
  'created_at',
  'updated_at',
] as const;

export function stackRowToStack(row: StackRow): Stack {
  return {
    id: row.id,
    organizationId: row.organization_id,
    projectId: row.project_id,
    environmentId: row.environment_id,
    changePipelineId: row.change_pipeline_id,
    destroyPipelineId: row.destroy_pipeline_id,
    type: row.type as Stack['type'],
    name: row.name,
    variables: row.variables,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    // The state backend workspace of the stack: named after it, served from the OpenTofu issue on.
    serviceStateBackendWorkspace: `stack-${row.id}`,
    ...(row.given_id ? { givenId: row.given_id } : {}),
    ...(row.source ? { source: row.source } : {}),
    ...(row.first_applied_at ? { firstAppliedAt: row.first_applied_at } : {}),
    ...(row.latest_run_id ? { latestRunId: row.latest_run_id } : {}),
    ...(row.output ? { output: row.output } : {}),
  };
}

function selectStacks(db: Executor) {
  return db.selectFrom('stacks').select(STACK_COLUMNS);
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
    source: Stack['source'] | null;
    variables: Record<string, unknown>;
    changePipelineId: string;
    destroyPipelineId: string;
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
    })
    .execute();
}

export function findStackById(db: Executor, organizationId: string, id: string): Promise<StackRow | undefined> {
  return selectStacks(db).where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst() as Promise<StackRow | undefined>;
}

export function lockStackInOrg(trx: Trx, organizationId: string, id: string): Promise<StackRow | undefined> {
  return selectStacks(trx).where('organization_id', '=', organizationId).where('id', '=', id).forUpdate().executeTakeFirst() as Promise<
    StackRow | undefined
  >;
}

export function findStacksPage(
  db: Executor,
  organizationId: string,
  filter: { projectId?: string; environmentId?: string },
  page: PageRequest,
): Promise<StackRow[]> {
  let query = selectStacks(db).where('organization_id', '=', organizationId);
  if (filter.projectId !== undefined) query = query.where('project_id', '=', filter.projectId);
  if (filter.environmentId !== undefined) query = query.where('environment_id', '=', filter.environmentId);
  return query.$call(keyset(page, 'stacks.id')).execute() as Promise<StackRow[]>;
}

export async function updateStack(
  db: Executor,
  id: string,
  c: { name?: string; source?: Stack['source']; variables?: Record<string, unknown> },
): Promise<void> {
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

/** Whether the stack has a run that is not finished (admitted or waiting). */
export async function hasActiveRun(db: Executor, stackId: string): Promise<boolean> {
  const row = await db
    .selectFrom('pipeline_runs')
    .select('id')
    .where('stack_id', '=', stackId)
    .where('status', 'in', ['QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL'])
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The environment, checked to be the organization's and in the project (environments are another domain's table). */
export async function findEnvironmentProject(db: Executor, organizationId: string, environmentId: string): Promise<string | undefined> {
  const { rows } = await sql<{ project_id: string }>`
    select project_id from environments where organization_id = ${organizationId} and id = ${environmentId}`.execute(db);
  return rows[0]?.project_id;
}
