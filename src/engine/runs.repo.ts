import { sql, type QueryCreator, type Selectable } from 'kysely';
import type { Database, JsonObject, PipelineRunsTable, StepExecutionsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import type { PipelineConfig } from '../pipelines/pipeline-config.ts';
import type { RunSet } from './run-decisions.ts';
import type { ExecutionEnvironmentType, RunAction, RunStatus, StepStatus } from '../platform/db/enums.ts';

/** SQL of the engine's runs and of the history rows every change writes beside itself. */
type RunColumns = Pick<
  Selectable<PipelineRunsTable>,
  | 'id'
  | 'organization_id'
  | 'pipeline_id'
  | 'pipeline_version_id'
  | 'stack_id'
  | 'status'
  | 'action'
  | 'autoapprove'
  | 'attempt_epoch'
  | 'admitted_at'
  | 'started_at'
  | 'last_attempt_started_at'
  | 'created_at'
>;

/** A run as every command reads it: its columns, its pipeline version's config and all its executions. */
export interface LockedRunRow extends RunColumns {
  input: Record<string, unknown> | null;
  config: PipelineConfig;
  /** The type of the stack's environment's execution environment; null when none is set. */
  execution_environment_type: ExecutionEnvironmentType | null;
  /** What that execution environment narrows its steps' egress to; null: no narrowing (or none set). */
  execution_environment_egress_allow: string[] | null;
  executions: ExecutionJson[];
  /** Whether a Git webhook triggered the run (its trigger metadata names the event); the metrics' `trigger`. */
  by_webhook: boolean;
  /** The commit the run checks out, once a step recorded it (or its trigger knew it). */
  commit_sha: string | null;
  /** The run's stack's Git source (`{ codeSourceId, ref, path }`); null without a stack or a source. */
  stack_source: JsonObject | null;
  /** A module deploy's record of what it deploys: its `module_input` are the variables its OpenTofu steps use. */
  data: JsonObject | null;
}

/** One execution as the run's read returns it. */
export interface ExecutionJson
  extends Pick<Selectable<StepExecutionsTable>, 'id' | 'step_id' | 'status' | 'attempt_epoch' | 'retry_attempt' | 'lease_owner' | 'lease_epoch'> {
  lease_expired: boolean;
  /** The step finished saying there is nothing to approve (`outputData.needsApproval` false: a plan with no changes). */
  nothing_to_approve: boolean | null;
  /** For a QUEUED execution: the highest log line number so far (a handed-back attempt keeps its lines). */
  last_log_seq: number | null;
  /** When its worker claimed it. */
  started_at: Date | null;
}

/** What every command reads beside the run's own columns. */
const RUN_JOINED = sql`v.config, ee.type as execution_environment_type, ee.egress_allow as execution_environment_egress_allow, coalesce(r.trigger_metadata ? 'webhook_event', false) as by_webhook, s.source as stack_source`;
const RUN_SELECT = sql`
  select r.id, r.organization_id, r.pipeline_id, r.pipeline_version_id, r.stack_id, r.status, r.action, r.autoapprove, r.input,
         r.attempt_epoch, r.admitted_at, r.started_at, r.last_attempt_started_at, r.created_at, r.commit_sha, r.data, ${RUN_JOINED}`;
/** The run `r` with what every command reads beside it; `runs`: the table, or the CTE of a run being inserted. */
const runFrom = (runs: 'pipeline_runs' | 'created') => sql`
    from ${sql.raw(runs)} r join pipeline_versions v on v.id = r.pipeline_version_id
    left join stacks s on s.id = r.stack_id
    left join environments en on en.id = s.environment_id
    left join execution_environments ee on ee.id = en.execution_environment_id`;
/**
 * readRun is every command's read of a run, under its lock: the run row is locked (`for no key
 * update`, which does not block the key-share locks of inserts that reference the run), then, by a
 * statement of its own, its executions in id order. That statement takes its snapshot once the run's
 * lock is granted, so it sees what the previous holder committed (the executions it inserted too),
 * and its row locks wait for a claim in flight: what the command reads stays as read until it commits.
 */
export async function readRun(trx: Executor, runId: string): Promise<LockedRunRow | undefined> {
  const { rows } = await sql<Omit<LockedRunRow, 'executions'>>`${RUN_SELECT} ${runFrom('pipeline_runs')} where r.id = ${runId} for no key update of r`.execute(
    trx,
  );
  if (!rows[0]) return undefined;
  const executions = await sql<ExecutionJson>`
    select e.id, e.step_id, e.status, e.attempt_epoch, e.retry_attempt, e.lease_owner, e.lease_epoch, e.started_at,
           coalesce(e.lease_expires_at < now(), false) as lease_expired,
           coalesce(e.output_data -> 'needsApproval' = 'false'::jsonb, false) as nothing_to_approve,
           case when e.status = 'QUEUED' then (select coalesce(max(seq), 0) from step_logs where step_execution_id = e.id) end as last_log_seq
      from step_executions e where e.pipeline_run_id = ${runId}
     order by e.id
       for no key update of e`.execute(trx);
  return { ...rows[0], executions: executions.rows };
}

/** One row of the append-only history, written by the same statement as the change it records. */
export interface TransitionRecord {
  runId: string;
  executionId?: string;
  from: StepStatus | null;
  to: StepStatus;
  reason: string;
  actor?: string;
}

export function transitionValues(t: TransitionRecord) {
  return {
    pipeline_run_id: t.runId,
    step_execution_id: t.executionId ?? null,
    from_status: t.from,
    to_status: t.to,
    reason: t.reason,
    actor: t.actor ?? null,
  };
}

/** A history row, written by the transaction of the change it records. */
export async function insertTransition(trx: Executor, t: TransitionRecord): Promise<void> {
  await trx.insertInto('run_transitions').values(transitionValues(t)).execute();
}

/** The history row of a change, written only when the change (the CTE `source`) wrote its row. */
export function historyFrom(source: string, t: TransitionRecord) {
  const v = transitionValues(t);
  return sql`insert into run_transitions (pipeline_run_id, step_execution_id, from_status, to_status, reason, actor)
    select ${v.pipeline_run_id}::text, ${v.step_execution_id}::text, ${v.from_status}::text, ${v.to_status}::text, ${v.reason}::text, ${v.actor}::text
      from ${sql.raw(source)}`;
}

/** A change of a run: its new status, if any, and what the decision sets beside it. */
export type RunChanges = RunSet & { status?: RunStatus };

/** The update of a run (its guard and history row are the caller's: locked-run.ts). */
export function runUpdate(db: QueryCreator<Database>, id: string, c: RunChanges) {
  return db
    .updateTable('pipeline_runs')
    .set({
      updated_at: sql<Date>`now()`,
      ...(c.status !== undefined ? { status: c.status } : {}),
      ...(c.error !== undefined ? { error: c.error === null ? null : JSON.stringify(c.error) } : {}),
      ...(c.admitted === true ? { admitted_at: sql<Date>`now()` } : c.admitted === false ? { admitted_at: null } : {}),
      ...(c.started === true ? { started_at: sql<Date>`coalesce(started_at, now())`, last_attempt_started_at: sql<Date>`now()` } : {}),
      ...(c.started === false ? { last_attempt_started_at: null } : {}),
      ...(c.completed === true ? { completed_at: sql<Date>`now()` } : c.completed === null ? { completed_at: null } : {}),
      ...(c.attemptEpoch !== undefined ? { attempt_epoch: c.attemptEpoch } : {}),
    })
    .where('id', '=', id);
}

export interface NewRunValues {
  id: string;
  organizationId: string;
  pipelineId: string;
  pipelineVersionId: string;
  stackId: string | null;
  action: RunAction | null;
  autoapprove: boolean;
  description: string;
  input: Record<string, unknown> | null;
  createdById: string | null;
  /** The commit to check out, when the trigger knows it (a push); else the run's first step resolves it. */
  commitSha?: string | null;
  triggerMetadata?: { trigger_given_id?: string; webhook_event?: string } | null;
  /** A module deploy's record of what it deploys (the run's `data`). */
  data?: Record<string, unknown> | null;
  /** Stacks that must be idle before the run takes its own (the stacks of the instances a module deploy consumes). */
  waitForStackIds?: string[];
  /** The one of them busy now: the run then waits without claiming its stack. */
  blockingStackId?: string | null;
}

/** A run just inserted: as readRun reads it (it has no executions yet), with every column of its row. */
export type InsertedRunRow = LockedRunRow & Selectable<PipelineRunsTable>;

/** What insertRun returns: the run, and its stack's active run afterwards (null without a stack). */
export interface InsertedRun {
  run: InsertedRunRow;
  stackActiveRunId: string | null;
}

/**
 * insertRun creates a QUEUED run and, in the same statement, its first history row; for a stack run
 * also the stack queue's claim (claimStackForRun): the run becomes the stack's latest, and its active
 * run when it had none. The caller holds the stack's row lock. Returns the run as the insert returned
 * it, and the stack's active run afterwards (null without a stack): the run itself when it got the stack.
 */
export async function insertRun(trx: Executor, v: NewRunValues, transition: TransitionRecord): Promise<InsertedRun> {
  const { rows } = await sql<InsertedRunRow & { stack_active_run_id: string | null }>`
    with created as (
      insert into pipeline_runs (id, organization_id, pipeline_id, pipeline_version_id, stack_id, status, action, autoapprove, description,
                                 input, created_by_id, commit_sha, trigger_metadata, data, wait_for_stack_ids, blocking_stack_id)
      values (${v.id}, ${v.organizationId}, ${v.pipelineId}, ${v.pipelineVersionId}, ${v.stackId}, 'QUEUED', ${v.action}, ${v.autoapprove},
              ${v.description}, ${v.input === null ? null : JSON.stringify(v.input)}::jsonb, ${v.createdById}, ${v.commitSha ?? null},
              ${v.triggerMetadata ? JSON.stringify(v.triggerMetadata) : null}::jsonb, ${v.data ? JSON.stringify(v.data) : null}::jsonb,
              ${v.waitForStackIds?.length ? v.waitForStackIds : null}::text[], ${v.blockingStackId ?? null})
      returning *),
    history as (${historyFrom('created', transition)}),
    stack as (
      update stacks set active_run_id = case when ${v.blockingStackId ?? null}::text is null then coalesce(active_run_id, ${v.id}) else active_run_id end,
                        latest_run_id = ${v.id}, updated_at = now()
       where id = (select stack_id from created)
      returning active_run_id)
    select r.*, ${RUN_JOINED}, (select active_run_id from stack) as stack_active_run_id
    ${runFrom('created')}`.execute(trx);
  const { stack_active_run_id, ...run } = rows[0];
  return { run: { ...run, executions: [] }, stackActiveRunId: stack_active_run_id };
}
