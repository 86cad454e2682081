import { sql, type QueryCreator, type Selectable } from 'kysely';
import type { Database, StepExecutionsTable } from '../platform/db/database.ts';
import type { Executor, Trx } from '../platform/db/db.ts';
import type { RunAction, RunStatus, StepStatus } from '../platform/db/enums.ts';
import type { ErrorBody } from '../platform/schema.ts';
import type { PipelineConfig } from '../pipelines/pipeline-config.ts';

/** SQL of the engine's hot paths. Every function takes the transaction that holds the run's lock. */
export interface RunRow {
  id: string;
  organization_id: string;
  pipeline_id: string;
  pipeline_version_id: string;
  stack_id: string | null;
  status: RunStatus;
  action: RunAction | null;
  autoapprove: boolean;
  input: Record<string, unknown> | null;
  attempt_epoch: number;
  admitted_at: Date | null;
  started_at: Date | null;
  last_attempt_started_at: Date | null;
}

export interface LockedRunRow extends RunRow {
  config: PipelineConfig;
  /** The type of the stack's environment's execution environment; null when none is set. */
  execution_environment_type: string | null;
}

export type ExecutionRow = Pick<
  Selectable<StepExecutionsTable>,
  'id' | 'organization_id' | 'pipeline_run_id' | 'step_id' | 'step_name' | 'step_type' | 'status' | 'attempt_epoch' | 'retry_attempt' | 'lease_owner' | 'lease_expires_at'
> & {
  /** The highest log line number written so far (0 for none): an attempt handed back keeps its lines. */
  last_log_seq: number;
};

const RUN_COLUMNS = sql.raw(`r.id, r.organization_id, r.pipeline_id, r.pipeline_version_id, r.stack_id, r.status, r.action,
  r.autoapprove, r.input, r.attempt_epoch, r.admitted_at, r.started_at, r.last_attempt_started_at`);

/** lockRunById takes the run's row lock: every transition of the run or of its steps is serialized on it. */
export async function lockRunById(trx: Trx, runId: string): Promise<LockedRunRow | undefined> {
  const { rows } = await sql<LockedRunRow>`
    select ${RUN_COLUMNS}, v.config, ee.type as execution_environment_type
      from pipeline_runs r join pipeline_versions v on v.id = r.pipeline_version_id
      left join stacks s on s.id = r.stack_id
      left join environments en on en.id = s.environment_id
      left join execution_environments ee on ee.id = en.execution_environment_id
     where r.id = ${runId}
       for update of r`.execute(trx);
  return rows[0];
}

const EXECUTION_COLUMNS = [
  'id',
  'organization_id',
  'pipeline_run_id',
  'step_id',
  'step_name',
  'step_type',
  'status',
  'attempt_epoch',
  'retry_attempt',
  'lease_owner',
  'lease_expires_at',
] as const;

export function findExecutionsOfEpoch(trx: Executor, runId: string, epoch: number): Promise<ExecutionRow[]> {
  return trx
    .selectFrom('step_executions')
    .select(EXECUTION_COLUMNS)
    .select((eb) =>
      eb
        .selectFrom('step_logs')
        .select(sql<number>`coalesce(max(seq), 0)`.as('seq'))
        .whereRef('step_logs.step_execution_id', '=', 'step_executions.id')
        .as('last_log_seq'),
    )
    .where('pipeline_run_id', '=', runId)
    .where('attempt_epoch', '=', epoch)
    .orderBy('id')
    .execute() as Promise<ExecutionRow[]>;
}

export function lockExecution(trx: Trx, executionId: string): Promise<Omit<ExecutionRow, 'last_log_seq'> | undefined> {
  return trx.selectFrom('step_executions').select(EXECUTION_COLUMNS).where('id', '=', executionId).forUpdate().executeTakeFirst() as Promise<
    Omit<ExecutionRow, 'last_log_seq'> | undefined
  >;
}

export interface NewExecutionValues {
  id: string;
  organizationId: string;
  runId: string;
  stepId: string;
  stepName: string;
  stepType: string;
  status: StepStatus;
  attemptEpoch: number;
  retryAttempt: number;
  isLastRetry: boolean;
  queueReason: string;
  inputData: Record<string, unknown> | null;
  statusDetail?: Record<string, unknown>;
}

/** insertExecution creates a step execution and, in the same statement, its first history row. */
export async function insertExecution(trx: Trx, v: NewExecutionValues, transition: TransitionRecord): Promise<void> {
  const terminal = v.status === 'SUCCEEDED' || v.status === 'SKIPPED';
  const dispatch = v.status === 'QUEUED';
  const insert = (db: QueryCreator<Database & { job: { id: string } }>) =>
    db
      .insertInto('step_executions')
      .values({
        id: v.id,
        organization_id: v.organizationId,
        pipeline_run_id: v.runId,
        step_id: v.stepId,
        step_name: v.stepName,
        step_type: v.stepType,
        status: v.status,
        attempt_epoch: v.attemptEpoch,
        retry_attempt: v.retryAttempt,
        is_last_retry: v.isLastRetry,
        queue_reason: v.queueReason,
        input_data: v.inputData === null ? null : JSON.stringify(v.inputData),
        status_detail: v.statusDetail ? JSON.stringify(v.statusDetail) : null,
        completed_at: terminal ? sql<Date>`now()` : null,
        ...(dispatch ? { engine_job_id: sql<string>`(select id from job)`, dispatched_at: sql<Date>`now()` } : {}),
      })
      .returning('id');
  // A QUEUED execution and its job are created by the same statement: one never exists without the other.
  const source = dispatch
    ? trx.with('job', (db) => db.selectNoFrom(stepJob(v.id, v.runId).as('id')))
    : trx.with('job', (db) => db.selectNoFrom(sql<string>`null`.as('id')));
  await source
    .with('created', insert)
    .insertInto('run_transitions')
    .values(transitionValues({ ...transition, executionId: v.id }))
    .execute();
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

function transitionValues(t: TransitionRecord) {
  return {
    pipeline_run_id: t.runId,
    step_execution_id: t.executionId ?? null,
    from_status: t.from,
    to_status: t.to,
    reason: t.reason,
    actor: t.actor ?? null,
  };
}

export interface ExecutionChanges {
  status?: StepStatus;
  error?: ErrorBody | null;
  outputData?: Record<string, unknown> | null;
  statusDetail?: Record<string, unknown> | null;
  leaseOwner?: string | null;
  leaseMs?: number | null;
  started?: boolean | null;
  completed?: boolean;
}

function executionUpdate(db: QueryCreator<Database>, id: string, c: ExecutionChanges) {
  return db
    .updateTable('step_executions')
    .set({
      updated_at: sql<Date>`now()`,
      ...(c.status !== undefined ? { status: c.status } : {}),
      ...(c.error !== undefined ? { error: c.error === null ? null : JSON.stringify(c.error) } : {}),
      ...(c.outputData !== undefined ? { output_data: c.outputData === null ? null : JSON.stringify(c.outputData) } : {}),
      ...(c.statusDetail !== undefined ? { status_detail: c.statusDetail === null ? null : JSON.stringify(c.statusDetail) } : {}),
      ...(c.leaseOwner !== undefined ? { lease_owner: c.leaseOwner } : {}),
      ...(c.leaseMs !== undefined
        ? { lease_expires_at: c.leaseMs === null ? null : sql<Date>`now() + make_interval(secs => ${c.leaseMs / 1000})`, heartbeat_at: sql<Date>`now()` }
        : {}),
      ...(c.started === true ? { started_at: sql<Date>`now()` } : c.started === null ? { started_at: null } : {}),
      ...(c.completed ? { completed_at: sql<Date>`now()` } : {}),
    })
    .where('id', '=', id);
}

/** updateExecution writes a change of a step execution and, in the same statement, its history row. */
export async function updateExecution(trx: Trx, id: string, c: ExecutionChanges, transition: TransitionRecord): Promise<void> {
  await trx
    .with('changed', (db) => executionUpdate(db, id, c).returning('id'))
    .insertInto('run_transitions')
    .values(transitionValues({ ...transition, executionId: id }))
    .execute();
}

export interface RunChanges {
  status?: RunStatus;
  error?: ErrorBody | null;
  admitted?: boolean;
  started?: boolean;
  completed?: boolean | null;
  attemptEpoch?: number;
}

function runUpdate(db: QueryCreator<Database>, id: string, c: RunChanges) {
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

/** updateRun writes a change of a run; a status change comes with its history row, in the same statement. */
export async function updateRun(trx: Trx, id: string, c: RunChanges, transition?: TransitionRecord): Promise<void> {
  if (!transition) {
    await runUpdate(trx, id, c).execute();
    return;
  }
  await trx.with('changed', (db) => runUpdate(db, id, c).returning('id')).insertInto('run_transitions').values(transitionValues(transition)).execute();
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
}

/** insertRun creates a QUEUED run and, in the same statement, its first history row. */
export async function insertRun(trx: Trx, v: NewRunValues, transition: TransitionRecord): Promise<void> {
  await trx
    .with('created', (db) =>
      db
        .insertInto('pipeline_runs')
        .values({
          id: v.id,
          organization_id: v.organizationId,
          pipeline_id: v.pipelineId,
          pipeline_version_id: v.pipelineVersionId,
          stack_id: v.stackId,
          status: 'QUEUED',
          action: v.action,
          autoapprove: v.autoapprove,
          description: v.description,
          input: v.input === null ? null : JSON.stringify(v.input),
          created_by_id: v.createdById,
        })
        .returning('id'),
    )
    .insertInto('run_transitions')
    .values(transitionValues(transition))
    .execute();
}

export async function insertTransition(trx: Trx, t: TransitionRecord): Promise<void> {
  await trx.insertInto('run_transitions').values(transitionValues(t)).execute();
}

/**
 * The graphile-worker `add_job` call of a step execution, as an expression returning the job id. It
 * runs in the caller's transaction, so the job exists exactly when the QUEUED step does. The job key
 * makes a redispatch replace a waiting job instead of adding one, and (graphile-worker's rule) add a
 * fresh job when the old one is locked by a worker that died before it claimed the step.
 */
function stepJob(executionId: string, runId: string) {
  return sql<string>`(graphile_worker.add_job('step.execute', json_build_object('stepExecutionId', ${executionId}::text, 'runId', ${runId}::text),
          max_attempts => 5, job_key => ${'step:' + executionId}, job_key_mode => 'preserve_run_at')).id::text`;
}

/** enqueueStepJob dispatches an existing QUEUED execution again (redispatch, hand-back) and records the job. */
export async function enqueueStepJob(trx: Executor, executionId: string, runId: string): Promise<string> {
  const { rows } = await sql<{ id: string }>`
    with job as (select ${stepJob(executionId, runId)} as id)
    update step_executions set engine_job_id = job.id, dispatched_at = now() from job
     where step_executions.id = ${executionId}
    returning job.id`.execute(trx);
  return rows[0].id;
}

/** Wakes the worker running the step so it kills the process now, not at its next heartbeat. */
export async function notifyStepStopped(trx: Trx, executionId: string): Promise<void> {
  await sql`select pg_notify('plinth_step_stop', ${executionId}::text)`.execute(trx);
}

export interface StackLockRow {
  id: string;
  active_run_id: string | null;
}

export function lockStack(trx: Trx, stackId: string): Promise<StackLockRow | undefined> {
  return trx.selectFrom('stacks').select(['id', 'active_run_id']).where('id', '=', stackId).forUpdate().executeTakeFirst();
}

/**
 * claimStackForRun makes the run the stack's active run when the stack has none, and returns the
 * stack's active run afterwards: the run itself when it got the stack. The UPDATE's row lock
 * serializes it with releaseStack. `latest` also records the run as the stack's latest.
 */
export async function claimStackForRun(trx: Trx, stackId: string, runId: string, latest: boolean): Promise<string | null> {
  const row = await trx
    .updateTable('stacks')
    .set({
      active_run_id: sql<string>`coalesce(active_run_id, ${runId})`,
      ...(latest ? { latest_run_id: runId } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', stackId)
    .returning('active_run_id')
    .executeTakeFirst();
  return row?.active_run_id ?? null;
}

export async function setStackActiveRun(trx: Trx, stackId: string, runId: string | null): Promise<void> {
  await trx.updateTable('stacks').set({ active_run_id: runId, updated_at: sql<Date>`now()` }).where('id', '=', stackId).execute();
}

/** The oldest run of the stack still waiting for admission (FIFO by time-ordered id). */
export async function findNextWaitingRunId(trx: Trx, stackId: string): Promise<string | undefined> {
  const row = await trx
    .selectFrom('pipeline_runs')
    .select('id')
    .where('stack_id', '=', stackId)
    .where('status', '=', 'QUEUED')
    .where('admitted_at', 'is', null)
    .orderBy('id')
    .limit(1)
    .forUpdate()
    .executeTakeFirst();
  return row?.id;
}
