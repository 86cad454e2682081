import { afterCommit } from '../platform/db/commit-hooks.ts';
import type { Executor } from '../platform/db/db.ts';
import { metrics, secondsSince } from '../platform/metrics/metrics.ts';
import { stepOf, type RunSnapshot, type RunWrite } from './run-decisions.ts';
import { isTerminalRun, isTerminalStep } from './run-state.ts';
import type { LockedRunRow } from './runs.repo.ts';

/**
 * The engine's metrics (docs/operations.md), taken where it commits a run's and its steps' changes.
 * Each is measured when the write is decided and counted only once its transaction commits, so a
 * transaction retried after a fault, or one that lost a race and rolled back, counts nothing.
 */
function observation(row: LockedRunRow, s: RunSnapshot, w: RunWrite): (() => void) | undefined {
  switch (w.kind) {
    case 'execution': {
      if (!isTerminalStep(w.status.to)) return undefined;
      const execution = s.executions.find((e) => e.id === w.id);
      const stepType = execution ? stepOf(s, execution.stepId).type : 'unknown';
      const startedAt = row.executions.find((e) => e.id === w.id)?.started_at;
      const seconds = startedAt ? secondsSince(startedAt) : undefined;
      const outcome = w.status.to;
      return () => {
        metrics.steps.inc({ step_type: stepType, outcome });
        if (seconds !== undefined) metrics.stepDuration.observe({ step_type: stepType }, seconds);
      };
    }
    case 'newExecution': {
      const retried = w.retryAttempt > 0;
      const stepType = stepOf(s, w.stepId).type;
      // Steps that end as they are created (skipped, auto-approved) are attempts that ended too.
      const ended = isTerminalStep(w.status) ? w.status : undefined;
      if (!retried && !ended) return undefined;
      return () => {
        if (retried) metrics.stepRetries.inc();
        if (ended) metrics.steps.inc({ step_type: stepType, outcome: ended });
      };
    }
    case 'run':
      return w.status ? runObservation(row, w.status.to, w.set.started === true) : undefined;
    default:
      return undefined;
  }
}

function runObservation(row: LockedRunRow, to: string, startsNow: boolean): (() => void) | undefined {
  // Queue wait is measured for a run's first attempt: a retry's own queueing time is not stored.
  const queueWait = startsNow && row.attempt_epoch === 1 ? secondsSince(row.created_at) : undefined;
  const ended = isTerminalRun(to);
  const duration = ended && row.last_attempt_started_at ? secondsSince(row.last_attempt_started_at) : undefined;
  if (queueWait === undefined && !ended) return undefined;
  const trigger = row.by_webhook ? 'webhook' : 'api';
  return () => {
    if (queueWait !== undefined) metrics.runQueueWait.observe(queueWait);
    if (ended) metrics.runs.inc({ trigger, outcome: to });
    if (duration !== undefined) metrics.runDuration.observe(duration);
  };
}

/** observeAfterCommit counts what the write changed once (and if) the transaction commits. */
export async function observeAfterCommit(ex: Executor, row: LockedRunRow, s: RunSnapshot, w: RunWrite): Promise<void> {
  const observe = observation(row, s, w);
  if (observe) await ex.executeQuery(afterCommit(observe));
}
