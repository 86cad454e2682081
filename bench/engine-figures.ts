// The arithmetic of bench/engine.bench.ts, apart from its process wrangling.

export interface StepRow {
  id: string;
  run_id: string;
  step_id: string;
  status: string;
  attempt_epoch: number;
  started_ms: number;
  completed_ms: number;
  dispatched_ms: number;
  process_ms: number | null;
  prepare_ms: number | null;
  cleanup_ms: number | null;
  /** RUNNING transitions of this execution: more than one means it was claimed twice. */
  claims: number;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export interface StepFigures {
  /** Per run: ms from sending the trigger to its first step's claim. */
  dispatch: number[];
  /** Per succeeded step: wall time minus the process's own time. */
  overhead: number[];
  overheadMean: number;
  process: number[];
  prepare: number[];
  cleanup: number[];
  /** Per dispatched step: ms from its job being added to its claim. */
  pickup: number[];
  /** Steps that should have run but have no SUCCEEDED execution. */
  lost: number;
  /** Executions claimed more than once, plus extra executions of one step in one attempt. */
  doublyRun: number;
}

export function stepFigures(rows: StepRow[], sentAt: Map<string, number>, stepsPerRun: number): StepFigures {
  const firstStart = new Map<string, number>();
  const perStep = new Map<string, number>();
  const overhead: number[] = [];
  const processTimes: number[] = [];
  const prepare: number[] = [];
  const cleanup: number[] = [];
  const pickup: number[] = [];
  let doublyRun = 0;
  for (const r of rows) {
    const prev = firstStart.get(r.run_id);
    if (!Number.isNaN(r.started_ms) && (prev === undefined || r.started_ms < prev)) firstStart.set(r.run_id, r.started_ms);
    const key = `${r.run_id}/${r.attempt_epoch}/${r.step_id}`;
    perStep.set(key, (perStep.get(key) ?? 0) + 1);
    if (r.claims > 1) doublyRun += r.claims - 1;
    if (r.status === 'SUCCEEDED' && r.process_ms !== null) {
      overhead.push(r.completed_ms - r.started_ms - r.process_ms);
      processTimes.push(r.process_ms);
      if (r.prepare_ms !== null) prepare.push(r.prepare_ms);
      if (r.cleanup_ms !== null) cleanup.push(r.cleanup_ms);
      if (!Number.isNaN(r.dispatched_ms)) pickup.push(r.started_ms - r.dispatched_ms);
    }
  }
  for (const count of perStep.values()) if (count > 1) doublyRun += count - 1;
  const succeeded = rows.filter((r) => r.status === 'SUCCEEDED').length;
  const dispatch = [...sentAt].flatMap(([runId, t0]) => (firstStart.has(runId) ? [firstStart.get(runId)! - t0] : []));
  return {
    dispatch,
    overhead,
    overheadMean: overhead.reduce((a, b) => a + b, 0) / Math.max(1, overhead.length),
    process: processTimes,
    prepare,
    cleanup,
    pickup,
    lost: sentAt.size * stepsPerRun - succeeded,
    doublyRun,
  };
}
