// Read side of runs and step executions; writes go through the engine (src/engine).

import { type Selectable, sql } from 'kysely';
import type { PipelineRunsTable, RunTransitionsTable, StacksTable, StepExecutionsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import { ACTIVE_RUN_STATUSES, type RunStatus, type StepStatus } from '../platform/db/enums.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import { PIPELINE_USAGE } from '../pipelines/pipelines.repo.ts';

/** The columns of a run's stack that its queue state shows, prefixed `stack_` (null for a run of a bare pipeline). */
type RunStackColumns = { [K in 'active_run_id' | 'project_id' | 'environment_id' as `stack_${K}`]: Selectable<StacksTable>[K] | null };

/** The module instance owning the stack a run waits for (a module deploy waiting for its producer). */
type BlockingColumns = { blocking_module_instance_id: string | null; blocking_module_name: string | null };

/** A run with its stack's queue columns: a read-only join, so a page of runs stays one query. */
export type RunReadRow = Selectable<PipelineRunsTable> & RunStackColumns & Partial<BlockingColumns>;

function selectRuns(db: Executor) {
  return db
    .selectFrom('pipeline_runs as r')
    .leftJoin('stacks as s', 's.id', 'r.stack_id')
    .leftJoin('module_instances as bi', 'bi.stack_id', 'r.blocking_stack_id')
    .selectAll('r')
    .select([
      's.active_run_id as stack_active_run_id',
      's.project_id as stack_project_id',
      's.environment_id as stack_environment_id',
      'bi.id as blocking_module_instance_id',
      'bi.name as blocking_module_name',
    ]);
}

export function findRunById(db: Executor, organizationId: string, id: string): Promise<RunReadRow | undefined> {
  return selectRuns(db).where('r.organization_id', '=', organizationId).where('r.id', '=', id).executeTakeFirst();
}

function findStackIdsTrackingRef(db: Executor, organizationId: string, ref: string): Promise<string[]> {
  return db
    .selectFrom('stacks')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where(sql<string>`source->>'ref'`, '=', ref)
    .execute()
    .then((rows) => rows.map((r) => r.id));
}

export interface RunFilter {
  pipelineId?: string;
  stackId?: string;
  environmentId?: string;
  createdById?: string;
  status?: RunStatus;
  ref?: string;
  /** A commit SHA or a prefix of one, in lower-case hex (the schema allows nothing else, so it holds no LIKE wildcard). */
  commitSha?: string;
}

export async function findRunsPage(db: Executor, organizationId: string, filter: RunFilter, page: PageRequest): Promise<RunReadRow[]> {
  let query = selectRuns(db).where('r.organization_id', '=', organizationId);
  if (filter.pipelineId !== undefined) query = query.where('r.pipeline_id', '=', filter.pipelineId);
  if (filter.stackId !== undefined) query = query.where('r.stack_id', '=', filter.stackId);
  if (filter.environmentId !== undefined) query = query.where('s.environment_id', '=', filter.environmentId);
  if (filter.createdById !== undefined) query = query.where('r.created_by_id', '=', filter.createdById);
  if (filter.status !== undefined) query = query.where('r.status', '=', filter.status);
  // The stacks that track the ref are read first: a ref no stack tracks reads no run at all (as one
  // query, the planner cannot know that and reads every run of the organization looking for one).
  if (filter.ref !== undefined) {
    const stacks = await findStackIdsTrackingRef(db, organizationId, filter.ref);
    if (stacks.length === 0) return [];
    // One array parameter, however many stacks track it.
    query = query.where(sql<boolean>`r.stack_id = any(${stacks}::text[])`);
  }
  if (filter.commitSha !== undefined) query = query.where('r.commit_sha', 'like', `${filter.commitSha}%`);
  return query.$call(keyset(page, 'r.id')).execute();
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

export async function findExecutionStatus(db: Executor, executionId: string): Promise<StepStatus | undefined> {
  const row = await db.selectFrom('step_executions').select('status').where('id', '=', executionId).executeTakeFirst();
  return row?.status;
}

export type TransitionRow = Selectable<RunTransitionsTable>;

/** The run's history, oldest first, keyed by the history's own sequence. */
export function findTransitionsPage(db: Executor, runId: string, page: { limit: number; after?: string }): Promise<TransitionRow[]> {
  let query = db.selectFrom('run_transitions').selectAll().where('pipeline_run_id', '=', runId);
  if (page.after !== undefined) query = query.where('id', '>', Number(page.after));
  return query
    .orderBy('id')
    .limit(page.limit + 1)
    .execute();
}

/** Whether the stack has a run that is not finished (admitted or waiting): it cannot be deleted then. */
/** The runs of a stack waiting for other stacks to be idle (a module deploy waiting for its producers). */
export function findWaitingRunsOfStack(db: Executor, stackId: string): Promise<{ id: string }[]> {
  return db
    .selectFrom('pipeline_runs')
    .select('id')
    .where('stack_id', '=', stackId)
    .where('status', '=', 'QUEUED')
    .where('blocking_stack_id', 'is not', null)
    .orderBy('id')
    .execute();
}

/** isRunFinished: the run ended (or no longer exists). */
export async function isRunFinished(db: Executor, runId: string): Promise<boolean> {
  const row = await db.selectFrom('pipeline_runs').select('status').where('id', '=', runId).executeTakeFirst();
  return !row || !(ACTIVE_RUN_STATUSES as readonly string[]).includes(row.status);
}

export async function hasActiveRunOfStack(db: Executor, stackId: string): Promise<boolean> {
  const row = await db
    .selectFrom('pipeline_runs')
    .select('id')
    .where('stack_id', '=', stackId)
    .where('status', 'in', ACTIVE_RUN_STATUSES)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Runs of the pipeline that are not finished: deleting them would pull work out from under a worker. */
async function findActiveRunsOfPipeline(db: Executor, pipelineId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('pipeline_runs')
    .select('id')
    .where('pipeline_id', '=', pipelineId)
    .where('status', 'in', ACTIVE_RUN_STATUSES)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: PIPELINE_USAGE.activeRuns, ref: r.id }));
}

registerDependent('Pipeline', { findUsages: findActiveRunsOfPipeline });
