// Every metric Plinth exposes, in one place (docs/operations.md lists them with their meaning). Labels
// are small closed sets: never a run, stack, organization or other id, so the scrape says how the
// platform does without telling anyone about a tenant, and its series count stays bounded.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** This process's registry: each process (`plinth api-server`, `plinth worker`, `plinth serve`) exposes its own. */
export const registry = new Registry();

/** Seconds from a few milliseconds to an hour: requests at the low end, steps and runs at the high one. */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

const registers = [registry];

export const metrics = {
  httpDuration: new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route template and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: SECONDS.slice(0, 12),
    registers,
  }),
  runs: new Counter({
    name: 'plinth_runs_total',
    help: 'Runs that ended, by what triggered them and their final status',
    labelNames: ['trigger', 'outcome'] as const,
    registers,
  }),
  runDuration: new Histogram({ name: 'plinth_run_duration_seconds', help: 'From the start of a run attempt to its end', buckets: SECONDS, registers }),
  runQueueWait: new Histogram({
    name: 'plinth_run_queue_wait_seconds',
    help: 'From a run being triggered to its first step starting',
    buckets: SECONDS,
    registers,
  }),
  steps: new Counter({
    name: 'plinth_step_executions_total',
    help: 'Step attempts that ended, by step type and final status',
    labelNames: ['step_type', 'outcome'] as const,
    registers,
  }),
  stepDuration: new Histogram({
    name: 'plinth_step_duration_seconds',
    help: 'From a worker claiming a step attempt to its end',
    labelNames: ['step_type'] as const,
    buckets: SECONDS,
    registers,
  }),
  stepRetries: new Counter({ name: 'plinth_step_retries_total', help: 'Failed step attempts retried as a new attempt', registers }),
  leaseExpiries: new Counter({
    name: 'plinth_lease_expiries_total',
    help: 'Step attempts failed over because their worker stopped renewing its lease',
    registers,
  }),
  stateOps: new Counter({
    name: 'plinth_state_ops_total',
    help: 'OpenTofu state backend operations, by operation and result',
    labelNames: ['op', 'result'] as const,
    registers,
  }),
  inboundEvents: new Counter({
    name: 'plinth_inbound_events_total',
    help: 'Events received from outside (Git webhooks, cloud events), by source, type and result',
    labelNames: ['source', 'type', 'result'] as const,
    registers,
  }),
  sseConnections: new Gauge({
    name: 'plinth_sse_connections',
    help: 'Server-Sent Events streams open in this process, by stream',
    labelNames: ['stream'] as const,
    registers,
  }),
  runsCurrent: new Gauge({
    name: 'plinth_runs_current',
    help: 'Runs not yet finished, by status (sampled, cluster-wide)',
    labelNames: ['status'] as const,
    registers,
  }),
  approvalsPending: new Gauge({ name: 'plinth_approvals_pending', help: 'Steps waiting for an approval (sampled, cluster-wide)', registers }),
  queueJobs: new Gauge({
    name: 'plinth_queue_jobs',
    help: 'Jobs in the run queue, by state (sampled, cluster-wide)',
    labelNames: ['state'] as const,
    registers,
  }),
  queueOldestReadyAge: new Gauge({
    name: 'plinth_queue_oldest_ready_age_seconds',
    help: 'Age of the oldest job ready to run and not taken (sampled, cluster-wide)',
    registers,
  }),
  workers: new Gauge({
    name: 'plinth_workers',
    help: "This process's worker slots, by state (busy: running a step)",
    labelNames: ['state'] as const,
    registers,
  }),
  dbPool: new Gauge({ name: 'plinth_db_pool_connections', help: "This process's database pool, by state", labelNames: ['state'] as const, registers }),
  buildInfo: new Gauge({ name: 'plinth_build_info', help: 'Always 1; the labels say which build runs', labelNames: ['version', 'commit'] as const, registers }),
};

let defaultsOn = false;

/** enableDefaultMetrics adds prom-client's process metrics (event-loop lag, heap, GC); once per process. */
export function enableDefaultMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics({ register: registry });
}

/** secondsSince is the time from `start` to now, in seconds; never negative (clocks of two hosts). */
export function secondsSince(start: Date | string): number {
  return Math.max(0, (Date.now() - new Date(start).getTime()) / 1000);
}
