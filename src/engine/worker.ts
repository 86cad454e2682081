import { randomBytes } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import type { Runner } from 'graphile-worker';
import type { Db } from '../platform/db/db.ts';
import type { Logger } from '../platform/logger.ts';
import type { EngineConfig } from './engine-config.ts';
import { LogSink } from './log-sink.ts';
import { startQueue, type StepExecutePayload } from './queue.ts';
import { runStep } from './runners/index.ts';
import { startSandbox } from './sandbox/index.ts';
import { claimStep, completeStep, failLostSteps, handBackStep, redispatchStaleSteps, renewLeases } from './step-lifecycle.ts';
import { engineError } from './transitions.ts';

type StopReason = 'stopped' | 'drain';

interface RunningAttempt {
  controller: AbortController;
  reason?: StopReason;
}

/**
 * EngineWorker is one worker process's engine: it takes `step.execute` jobs from graphile-worker,
 * claims the step under a lease, runs it, and records the outcome. Beside the jobs it keeps three
 * loops: the heartbeat (renews its leases, stops attempts it no longer holds), a LISTEN on
 * `plinth_step_stop` (stops a cancelled step at once), and the reaper (fails attempts of dead workers
 * over, redispatches stale jobs).
 */
export class EngineWorker {
  readonly workerId: string;
  /** Every process this worker spawned, for the tests' leak check. */
  readonly spawnedPids: number[] = [];
  private readonly running = new Map<string, RunningAttempt>();
  private runner: Runner | undefined;
  private listener: pg.Client | undefined;
  private timers: NodeJS.Timeout[] = [];
  private draining = false;
  private lastRenewal = Date.now();

  constructor(
    private readonly db: Db,
    private readonly connectionString: string,
    private readonly config: EngineConfig,
    private readonly log: Logger,
    workerId?: string,
  ) {
    this.workerId = workerId ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  }

  async start(): Promise<void> {
    await startSandbox(this.config.sandbox, this.log);
    this.listener = new pg.Client({ connectionString: this.connectionString });
    this.listener.on('error', (error) => this.log.warn({ err: error }, 'lost the step-stop listener'));
    await this.listener.connect();
    this.listener.on('notification', (n) => n.payload && this.stopAttempt(n.payload, 'stopped'));
    await this.listener.query('listen plinth_step_stop');
    this.runner = await startQueue({
      connectionString: this.connectionString,
      concurrency: this.config.concurrency,
      pollMs: this.config.pollMs,
      log: this.log,
      executeStep: (p) => this.executeStep(p),
    });
    this.every(this.config.heartbeatMs, () => this.heartbeat());
    this.every(this.config.reapMs, () => this.reap());
    this.log.info({ workerId: this.workerId, concurrency: this.config.concurrency }, 'started worker');
  }

  /**
   * stop drains: no new jobs; each running attempt's process is stopped and the attempt handed back
   * to the queue (QUEUED again) for another worker; then the queue's pool shuts down.
   */
  async stop(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    for (const id of this.running.keys()) this.stopAttempt(id, 'drain');
    await this.runner?.stop();
    for (const timer of this.timers) clearInterval(timer);
    await this.listener?.end().catch(() => {});
    this.log.info({ workerId: this.workerId }, 'stopped worker');
  }

  get activeAttempts(): number {
    return this.running.size;
  }

  private every(ms: number, fn: () => Promise<unknown>) {
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      fn()
        .catch((error) => this.log.warn({ err: error, workerId: this.workerId }, 'engine loop failed'))
        .finally(() => (busy = false));
    }, ms);
    this.timers.push(timer);
  }

  private stopAttempt(executionId: string, reason: StopReason) {
    const attempt = this.running.get(executionId);
    if (!attempt || attempt.reason) return;
    attempt.reason = reason;
    attempt.controller.abort();
  }

  private async heartbeat() {
    const ids = [...this.running.keys()];
    let held: Set<string>;
    try {
      held = await renewLeases(this.db, this.workerId, ids, this.config.leaseMs);
      this.lastRenewal = Date.now();
    } catch (error) {
      // Cut off from the database for longer than a lease: the reaper elsewhere has failed these
      // attempts over by now, so their processes must not go on running beside the retries.
      if (Date.now() - this.lastRenewal > this.config.leaseMs) for (const id of ids) this.stopAttempt(id, 'stopped');
      throw error;
    }
    for (const id of ids) if (!held.has(id) && this.running.has(id)) this.stopAttempt(id, 'stopped');
  }

  private async reap() {
    const lost = await failLostSteps(this.db, this.workerId);
    if (lost.length) this.log.warn({ workerId: this.workerId, executions: lost }, 'failed over attempts of a lost worker');
    await redispatchStaleSteps(this.db, this.config.redispatchMs);
  }

  private async executeStep({ stepExecutionId: id, runId }: StepExecutePayload): Promise<void> {
    if (this.draining) throw new Error('worker is draining');
    const claimed = await claimStep(this.db, id, runId, this.workerId, this.config.leaseMs);
    if (!claimed) return;
    const attempt: RunningAttempt = { controller: new AbortController() };
    this.running.set(id, attempt);
    const onRetry = (err: unknown) => this.log.warn({ err, executionId: id }, 'retrying a log flush');
    const sink = new LogSink(this.db, id, claimed.nextLogSeq, { limits: this.config.logLimits, retry: { onRetry } });
    let outcome;
    try {
      outcome = await runStep(claimed, {
        sink,
        signal: attempt.controller.signal,
        killGraceMs: this.config.killGraceMs,
        sandbox: this.config.sandbox,
        workerId: this.workerId,
        onSpawn: (pid) => this.spawnedPids.push(pid),
      });
    } catch (error) {
      outcome = { status: 'FAILED' as const, error: engineError('Engine:Worker:ERROR', error instanceof Error ? error.message : String(error)) };
    } finally {
      this.running.delete(id);
    }
    if (attempt.reason === 'drain') sink.write('system', `worker ${this.workerId} is shutting down; the step goes back to the queue`);
    await sink.close();
    if (sink.lastError) this.log.error({ err: sink.lastError, executionId: id }, 'failed to store log lines');
    if (attempt.reason === 'drain') await handBackStep(this.db, id, runId, this.workerId);
    // A stopped attempt (cancelled, or failed over after a lost lease) was already settled by whoever stopped it.
    else if (attempt.reason !== 'stopped') await completeStep(this.db, id, runId, this.workerId, outcome);
  }
}
