import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { PipelineRunsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import type { RunStatus } from '../platform/db/enums.ts';
import { executionUpdate, newExecutionJobs, newExecutionsParts, type ExecutionChanges, type ExecutionGuard, type NewExecutionRow } from './executions.repo.ts';
import { historyFrom, runUpdate, type RunChanges, type TransitionRecord } from './runs.repo.ts';

/** Where a stopped step's id is announced, for the worker running it (worker.ts listens). */
export const STEP_STOP_CHANNEL = 'plinth_step_stop';

/**
 * SQL of a decision's writes as one statement: each write a data-modifying CTE, with its history row
 * beside it, and the statement returns how many rows each changed. One round trip instead of one per
 * write; and, being one statement, one atomic change even outside a transaction (a claim).
 *
 * The parts of one statement share its snapshot and cannot see each other's changes, so no two of
 * them may write the same row (the caller starts a new statement for that: statementKey).
 */
export type StatementWrite =
  /** A guarded change of an execution: counted 1 when the row still had the guard's status and epoch. */
  | { kind: 'execution'; id: string; changes: ExecutionChanges; guard: ExecutionGuard; transition: TransitionRecord }
  /** A change of the run; with a transition, guarded by its `from` status. */
  | { kind: 'run'; runId: string; changes: RunChanges; transition?: TransitionRecord & { from: RunStatus } }
  /**
   * The run's start by a claim made without the run's lock (at most one per statement). The run row is
   * locked first, the order every command locks in; the statement's execution writes apply only while
   * the run is at `from` or `to`, and the start only once they all applied.
   */
  | { kind: 'runStart'; runId: string; changes: RunChanges; transition: TransitionRecord & { from: RunStatus; to: RunStatus } }
  /** New executions of one run, their history rows and, for the QUEUED ones, their jobs. */
  | { kind: 'newExecutions'; rows: readonly NewExecutionRow[] }
  /** Wakes the worker running the execution (delivered at commit). */
  | { kind: 'stopProcess'; id: string }
  /** A write made beside the decision's, unguarded: a step's last log lines (a data-modifying statement). */
  | { kind: 'alongside'; statement: RawBuilder<unknown> };

/** The CTE of the jobs of every QUEUED execution the statement creates (one `add_jobs` for all). */
const JOBS = 'step_jobs';

/** The row a write changes: two writes of one row need two statements. */
export function statementKey(w: StatementWrite): string | undefined {
  if (w.kind === 'execution') return `execution:${w.id}`;
  if (w.kind === 'run' || w.kind === 'runStart') return `run:${w.runId}`;
  return undefined;
}

export interface StatementResult {
  /** Rows each write changed, in the order given. */
  changed: number[];
  /** With a runStart: the run's status as locked, before the start. */
  runStatus?: string;
  /** With `returnRun`: the run's row as the statement's change of it left it (none when it changed none). */
  runRow?: Selectable<PipelineRunsTable>;
}

/**
 * writeStatement makes `writes` in one statement. With `returnRun`, the change of the run (a statement
 * has at most one) returns the row it wrote, so that a caller showing the run need not read it again.
 */
export async function writeStatement(ex: Executor, writes: readonly StatementWrite[], options: { returnRun?: boolean } = {}): Promise<StatementResult> {
  const ctes: RawBuilder<unknown>[] = [];
  const counts: RawBuilder<unknown>[] = [];
  const starts = writes.filter((w) => w.kind === 'runStart');
  if (starts.length > 1) throw new Error('one run start per statement');
  const start = starts[0];
  if (start) ctes.push(sql`run_lock as (select status from pipeline_runs where id = ${start.runId} for no key update)`);
  const gate = start ? sql<boolean>`exists (select 1 from run_lock where status in (${start.transition.from}, ${start.transition.to}))` : undefined;
  const executionParts: string[] = [];
  let runPart: string | undefined;
  const cte = (part: string, body: unknown) => ctes.push(sql`${sql.raw(part)} as (${body})`);
  const count = (part: string) => void counts.push(sql`(select count(*) from ${sql.raw(part)})::int as ${sql.raw(part)}`);
  const jobs = newExecutionJobs(writes.flatMap((w) => (w.kind === 'newExecutions' ? w.rows : [])));
  if (jobs) cte(JOBS, jobs);
  writes.forEach((w, k) => {
    const name = `w${k}`;
    switch (w.kind) {
      case 'execution': {
        const update = executionUpdate(ex, w.id, w.changes, w.guard);
        cte(name, (gate ? update.where(gate) : update).returning('id'));
        cte(`${name}_h`, historyFrom(name, { ...w.transition, executionId: w.id }));
        executionParts.push(name);
        return count(name);
      }
      case 'run': {
        const update = runUpdate(ex, w.runId, w.changes);
        const guarded = w.transition ? update.where('status', '=', w.transition.from) : update;
        cte(name, options.returnRun ? guarded.returningAll() : guarded.returning('id'));
        runPart = name;
        if (w.transition) cte(`${name}_h`, historyFrom(name, w.transition));
        return count(name);
      }
      case 'runStart':
        return; // Last: it waits on every execution write.
      case 'newExecutions': {
        const parts = newExecutionsParts(ex, w.rows, JOBS);
        cte(name, parts.executions);
        cte(`${name}_h`, parts.history);
        return count(name);
      }
      case 'stopProcess':
        cte(name, sql`select pg_notify(${STEP_STOP_CHANNEL}, ${w.id}::text)`);
        return count(name);
      case 'alongside':
        cte(name, w.statement);
        counts.push(sql`0 as ${sql.raw(name)}`); // Unguarded, and it need not return rows.
        return;
    }
  });
  if (start) {
    const name = `w${writes.indexOf(start)}`;
    const applied = executionParts.map((part) => sql<boolean>`exists (select 1 from ${sql.raw(part)})`);
    const update = runUpdate(ex, start.runId, start.changes).where('status', '=', start.transition.from);
    const guarded = applied.length ? update.where(sql<boolean>`${sql.join(applied, sql` and `)}`) : update;
    cte(name, options.returnRun ? guarded.returningAll() : guarded.returning('id'));
    cte(`${name}_h`, historyFrom(name, start.transition));
    runPart = name;
    count(name);
  }
  // Evaluated left to right: the run's lock, then each write in order, then the run's start.
  const columns = start ? [sql`(select status from run_lock) as run_status`, ...counts] : counts;
  // The counts are one row; the run's row, when asked for, is joined to it (nulls when it changed none).
  const withRun = options.returnRun === true && runPart !== undefined;
  const from = withRun ? sql` from (select ${sql.join(columns)}) as counts left join ${sql.raw(runPart!)} as run_row on true` : sql``;
  const selected = withRun ? sql`counts.*, run_row.id is not null as run_returned, run_row.*` : sql.join(columns);
  const { rows } = await sql<Record<string, unknown>>`with ${sql.join(ctes)} select ${selected}${from}`.execute(ex);
  const row = rows[0];
  const changed = writes.map((_, k) => Number(row[`w${k}`]));
  const runStatus = start ? { runStatus: String(row.run_status) } : {};
  return { changed, ...runStatus, ...(withRun && row.run_returned ? { runRow: runRowOf(row) } : {}) };
}

/** The run's own columns of a statement's result row (the counts and the lock's status left out). */
function runRowOf(row: Record<string, unknown>): Selectable<PipelineRunsTable> {
  const own = Object.entries(row).filter(([k]) => !/^w\d+$/.test(k) && k !== 'run_status' && k !== 'run_returned');
  return Object.fromEntries(own) as Selectable<PipelineRunsTable>;
}
