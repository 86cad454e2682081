// What an OpenTofu step reads and writes beside its run: the state credential it mints, the saved plan
// of its run's attempt, its stack's variables and, after an apply, the stack's outputs. The engine owns
// state_run_credentials and stack_plans; it reads stack_sensitive_variables (the stacks domain's) and
// writes the stack's apply results, as it already writes the stack's queue columns (stack-queue.repo.ts).

import { sql, type Selectable } from 'kysely';
import type { StackPlansTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { ACTIVE_RUN_STATUSES } from '../platform/db/enums.ts';
import { STOPPING_STEP_WINDOW_MS } from '../engine/sandbox/stop.ts';

export interface StackForStep {
  id: string;
  organization_id: string;
  variables: Record<string, unknown>;
}

export async function findStackForStep(db: Executor, stackId: string): Promise<StackForStep | undefined> {
  return db.selectFrom('stacks').select(['id', 'organization_id', 'variables']).where('id', '=', stackId).executeTakeFirst();
}

/** The sealed sensitive variables of a stack, opened by the runner only to hand them to OpenTofu. */
export function findSealedVariables(db: Executor, stackId: string): Promise<{ name: string; sealed_value: string }[]> {
  return db.selectFrom('stack_sensitive_variables').select(['name', 'sealed_value']).where('stack_id', '=', stackId).orderBy('name').execute();
}

export async function insertRunCredential(
  db: Executor,
  v: { id: string; tokenHash: string; organizationId: string; stackId: string; runId: string; stepExecutionId: string; ttlMs: number },
): Promise<void> {
  await db
    .insertInto('state_run_credentials')
    .values({
      id: v.id,
      token_hash: v.tokenHash,
      organization_id: v.organizationId,
      stack_id: v.stackId,
      run_id: v.runId,
      step_execution_id: v.stepExecutionId,
      expires_at: sql<Date>`now() + ${v.ttlMs} * interval '1 millisecond'`,
    })
    .execute();
}

export async function deleteRunCredential(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('state_run_credentials').where('id', '=', id).execute();
}

export interface LiveRunCredential {
  organization_id: string;
  stack_id: string;
  run_id: string;
}

/**
 * findLiveRunCredential resolves a run credential by its token's hash: only while it has not expired and
 * its run is not finished (or finished less than STOPPING_STEP_WINDOW_MS ago), so a run's credentials die
 * with the run even when its worker died first.
 */
export function findLiveRunCredential(db: Executor, tokenHash: string): Promise<LiveRunCredential | undefined> {
  return db
    .selectFrom('state_run_credentials as c')
    .innerJoin('pipeline_runs as r', 'r.id', 'c.run_id')
    .select(['c.organization_id', 'c.stack_id', 'c.run_id'])
    .where('c.token_hash', '=', tokenHash)
    .where('c.expires_at', '>', sql<Date>`now()`)
    .where((eb) =>
      eb.or([eb('r.status', 'in', ACTIVE_RUN_STATUSES), eb('r.completed_at', '>', sql<Date>`now() - ${STOPPING_STEP_WINDOW_MS} * interval '1 millisecond'`)]),
    )
    .executeTakeFirst();
}

export type StackPlanRow = Selectable<StackPlansTable>;

/** upsertPlan keeps one plan per run attempt: a retried plan step replaces its earlier attempt's file. */
export async function upsertPlan(
  db: Executor,
  v: { runId: string; attemptEpoch: number; stackId: string; stepExecutionId: string; isDestroy: boolean; hasChanges: boolean; sealedPlan: string },
): Promise<void> {
  const values = {
    run_id: v.runId,
    attempt_epoch: v.attemptEpoch,
    stack_id: v.stackId,
    step_execution_id: v.stepExecutionId,
    is_destroy: v.isDestroy,
    has_changes: v.hasChanges,
    sealed_plan: v.sealedPlan,
  };
  await db
    .insertInto('stack_plans')
    .values(values)
    .onConflict((oc) => oc.columns(['run_id', 'attempt_epoch']).doUpdateSet({ ...values, created_at: sql<Date>`now()` }))
    .execute();
}

export function findPlan(db: Executor, runId: string, attemptEpoch: number): Promise<StackPlanRow | undefined> {
  return db.selectFrom('stack_plans').selectAll().where('run_id', '=', runId).where('attempt_epoch', '=', attemptEpoch).executeTakeFirst();
}

/** recordApply writes what an apply (or destroy) leaves on its stack: outputs, the latest run, and the first apply's time once. */
export async function recordApply(db: Executor, stackId: string, runId: string, output: Record<string, unknown>, isApply: boolean): Promise<void> {
  await db
    .updateTable('stacks')
    .set({
      output: JSON.stringify(output),
      latest_run_id: runId,
      ...(isApply ? { first_applied_at: sql<Date>`coalesce(first_applied_at, now())` } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', stackId)
    .execute();
}

/** recordLatestRun marks a run as the stack's latest (a plan that changed nothing applies nothing). */
export async function recordLatestRun(db: Executor, stackId: string, runId: string): Promise<void> {
  await db.updateTable('stacks').set({ latest_run_id: runId, updated_at: sql<Date>`now()` }).where('id', '=', stackId).execute();
}

/**
 * recordRunNote adds a line to a run's history that changes no status (from and to are the run's current
 * one): a state lock force-unlocked under the run, for example.
 */
export async function recordRunNote(db: Executor, runId: string, reason: string, actor: string): Promise<void> {
  await db
    .insertInto('run_transitions')
    .columns(['pipeline_run_id', 'step_execution_id', 'from_status', 'to_status', 'reason', 'actor'])
    .expression((eb) =>
      eb
        .selectFrom('pipeline_runs')
        .select(['id', sql<null>`null`.as('step_execution_id'), 'status', 'status', sql<string>`${reason}`.as('reason'), sql<string>`${actor}`.as('actor')])
        .where('id', '=', runId),
    )
    .execute();
}
