import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { Db } from '../../src/platform/db/db.ts';

/**
 * Fault injection from inside PostgreSQL: a trigger that fails one write, once. A sequence counts
 * the firings (sequences are not transactional, so the rolled-back write still counts and the
 * retry passes). `deadlock` raises SQLSTATE 40P01 as a real deadlock would; `disconnect` terminates
 * the session's own backend, so the client sees its connection drop mid-transaction.
 */
export type FaultKind = 'deadlock' | 'disconnect';

export interface Fault {
  name: string;
  /** Whether the fault fired (the write it targets was attempted). */
  fired(): Promise<boolean>;
  remove(): Promise<void>;
}

let counter = 0;

export async function injectFault(db: Db, o: { table: string; on: 'insert' | 'update'; when: string; kind: FaultKind }): Promise<Fault> {
  const name = `fault_${process.pid}_${++counter}`;
  const action =
    o.kind === 'deadlock'
      ? `raise exception 'injected deadlock' using errcode = '40P01';`
      : `perform pg_terminate_backend(pg_backend_pid()); perform pg_sleep(5);`;
  await sql.raw(`create sequence ${name}`).execute(db);
  await sql
    .raw(`create function ${name}() returns trigger language plpgsql as $$
    begin
      if nextval('${name}') = 1 then ${action} end if;
      return new;
    end $$`)
    .execute(db);
  await sql.raw(`create trigger ${name} before ${o.on} on ${o.table} for each row when (${o.when}) execute function ${name}()`).execute(db);
  return {
    name,
    fired: async () => {
      const { rows } = await sql<{ is_called: boolean }>`select is_called from ${sql.table(name)}`.execute(db);
      return rows[0].is_called;
    },
    remove: async () => {
      await sql.raw(`drop trigger ${name} on ${o.table}; drop function ${name}(); drop sequence ${name}`).execute(db);
    },
  };
}

/** The number of times each step's process really started, from the marker lines the steps write. */
export function processStarts(markerDir: string, stepId: string): number {
  const file = path.join(markerDir, stepId);
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
}

/** A step command that records each real start of its process in `markerDir/<step id>`, then does `then`. */
export function markedCommand(markerDir: string, then = 'true'): string {
  return `echo start >> "${markerDir}/$PLINTH_STEP_ID"; ${then}`;
}

/**
 * assertHistoryConsistent checks a run's history: every execution's and the run's status changes
 * chain (each starts where the previous ended), begin with a creation and end at the current status.
 */
export async function assertHistoryConsistent(db: Db, runId: string): Promise<void> {
  const { rows } = await sql<{ step_execution_id: string | null; from_status: string | null; to_status: string }>`
    select step_execution_id, from_status, to_status from run_transitions where pipeline_run_id = ${runId} order by id`.execute(db);
  const current = new Map<string, string>();
  for (const r of rows) {
    const key = r.step_execution_id ?? 'run';
    const previous = current.get(key) ?? null;
    // A retried run starts a new epoch from its terminal status; everything else chains exactly.
    assert.equal(r.from_status, previous, `history of ${key} in run ${runId}: ${r.from_status} → ${r.to_status} after ${previous}`);
    current.set(key, r.to_status);
  }
  const run = await sql<{ status: string }>`select status from pipeline_runs where id = ${runId}`.execute(db);
  assert.equal(current.get('run'), run.rows[0].status, 'the run history ends at the run status');
  const executions = await sql<{ id: string; status: string }>`select id, status from step_executions where pipeline_run_id = ${runId}`.execute(db);
  for (const e of executions.rows) assert.equal(current.get(e.id), e.status, `the history of execution ${e.id} ends at its status`);
}
