import { sql, type Selectable } from 'kysely';
import type { StepExecutionsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';

/** Read side of runs and step executions; writes go through the engine (src/engine). */
export interface RunReadRow {
  id: string;
  organization_id: string;
  pipeline_id: string;
  pipeline_version_id: string;
  stack_id: string | null;
  status: string;
  action: string | null;
  autoapprove: boolean;
  description: string;
  input: Record<string, unknown> | null;
  trigger_metadata: Record<string, string> | null;
  attempt_epoch: number;
  admitted_at: Date | null;
  created_by_id: string | null;
  started_at: Date | null;
  completed_at: Date | null;
  last_attempt_started_at: Date | null;
  error: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  stack_active_run_id: string | null;
  stack_project_id: string | null;
  stack_environment_id: string | null;
}

function selectRuns(db: Executor) {
  return db
    .selectFrom('pipeline_runs as r')
    .leftJoin('stacks as s', 's.id', 'r.stack_id')
    .select([
      'r.id',
      'r.organization_id',
      'r.pipeline_id',
      'r.pipeline_version_id',
      'r.stack_id',
      'r.status',
      'r.action',
      'r.autoapprove',
      'r.description',
      'r.input',
      'r.trigger_metadata',
      'r.attempt_epoch',
      'r.admitted_at',
      'r.created_by_id',
      'r.started_at',
      'r.completed_at',
      'r.last_attempt_started_at',
      'r.error',
      'r.created_at',
      'r.updated_at',
      's.active_run_id as stack_active_run_id',
      's.project_id as stack_project_id',
      's.environment_id as stack_environment_id',
    ]);
}

export function findRunById(db: Executor, organizationId: string, id: string): Promise<RunReadRow | undefined> {
  return selectRuns(db).where('r.organization_id', '=', organizationId).where('r.id', '=', id).executeTakeFirst() as Promise<RunReadRow | undefined>;
}

export function findRunsPage(
  db: Executor,
  organizationId: string,
  filter: { pipelineId?: string; stackId?: string; status?: string },
  page: PageRequest,
): Promise<RunReadRow[]> {
  let query = selectRuns(db).where('r.organization_id', '=', organizationId);
  if (filter.pipelineId !== undefined) query = query.where('r.pipeline_id', '=', filter.pipelineId);
  if (filter.stackId !== undefined) query = query.where('r.stack_id', '=', filter.stackId);
  if (filter.status !== undefined) query = query.where('r.status', '=', filter.status);
  return query.$call(keyset(page, 'r.id')).execute() as Promise<RunReadRow[]>;
}

export type ExecutionReadRow = Selectable<StepExecutionsTable>;

function selectExecutions(db: Executor) {
  return db.selectFrom('step_executions').selectAll();
}

export function findExecutionById(db: Executor, organizationId: string, id: string): Promise<ExecutionReadRow | undefined> {
  return selectExecutions(db).where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export function findExecutionsPage(db: Executor, runId: string, filter: { attemptEpoch?: number }, page: PageRequest): Promise<ExecutionReadRow[]> {
  let query = selectExecutions(db).where('pipeline_run_id', '=', runId);
  if (filter.attemptEpoch !== undefined) query = query.where('attempt_epoch', '=', filter.attemptEpoch);
  return query.$call(keyset(page, 'step_executions.id')).execute();
}

export async function findExecutionStatus(db: Executor, executionId: string): Promise<string | undefined> {
  const { rows } = await sql<{ status: string }>`select status from step_executions where id = ${executionId}`.execute(db);
  return rows[0]?.status;
}

export interface TransitionRow {
  id: number;
  pipeline_run_id: string;
  step_execution_id: string | null;
  from_status: string | null;
  to_status: string;
  reason: string;
  actor: string | null;
  created_at: Date;
}

/** The run's history, oldest first, keyed by the history's own sequence. */
export function findTransitionsPage(db: Executor, runId: string, page: { limit: number; after?: string }): Promise<TransitionRow[]> {
  let query = db.selectFrom('run_transitions').selectAll().where('pipeline_run_id', '=', runId);
  if (page.after !== undefined) query = query.where('id', '>', Number(page.after));
  return query.orderBy('id').limit(page.limit + 1).execute() as Promise<TransitionRow[]>;
}
