import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Db } from '../platform/db/db.ts';
import { ChannelListener } from '../platform/db/listener.ts';
import type { RetryOptions } from '../platform/db/retry.ts';
import type { Logger } from '../platform/logger.ts';
import type { EngineConfig } from './engine-config.ts';
import { STEP_STOP_CHANNEL } from './executions.repo.ts';
import { engineError } from './engine-errors.ts';
import { LogSink } from './log-sink.ts';
import { startQueue, type Queue, type StepExecutePayload } from './queue.ts';
import { runStep } from './runners/index.ts';
import { withLostLines } from './runners/output-capture.ts';
import { startSandbox } from './sandbox/index.ts';
import {
  claimStep,
  completeStep,
  handBackStep,
  reapLostSteps,
  redispatchStaleSteps,
  renewHeldLeases,
  type HeldAttempt,
  type StepOutcome,
} from './step-lifecycle.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { metrics } from '../platform/metrics/metrics.ts';
import { onScrape } from '../platform/metrics/server.ts';
import { withSpan } from '../platform/tracing.ts';

type StopReason = 'stopped' | 'drain';

/** The workers of this process, for the plinth_workers gauge (tests run several in one process). */
const liveWorkers = new Set<EngineWorker>();
onScrape(() => {
  let busy = 0;
  let slots = 0;
  for (const w of liveWorkers) {
    busy += w.activeAttempts;
    slots += w.concurrency;
  }
  metrics.workers.set({ state: 'busy' }, busy);
  metrics.workers.set({ state: 'idle' }, Math.max(0, slots - busy));
});

/**
 * One attempt this worker has taken on, from before its claim until its outcome is committed: while
 * it is here, its lease is renewed, and no second job of this worker takes the same execution.
 */
interface RunningAttempt {
  /** Stops the step's process. */
  process: AbortController;
  /** Aborted once the lease is known lost: an outcome still being committed is given up. */
  lease: AbortController;
  reason?: StopReason;
  /** Set once the claim committed. */
  leaseEpoch?: number;
}

/**
 * EngineWorker is one worker process's engine: it takes `step.execute` jobs from graphile-worker,
 * claims the step under a lease, runs it, and commits the outcome. Beside the jobs it keeps three
 * loops: the heartbeat (renews its leases, stops attempts it no longer holds), a LISTEN on
 * `plinth_step_stop` (stops a cancelled step at once), and the reaper (fails attempts of dead workers
 * over, redispatches lost jobs). Database faults never end it: every write retries, and the queue is
 * restarted should graphile-worker give up.
 */
export class EngineWorker {
  readonly workerId: string;
  /** Every process this worker spawned, for the tests' leak check. */
  readonly spawnedPids: number[] = [];
  private readonly running = new Map<string, RunningAttempt>();
  private queue: Queue | undefined;
  private readonly listener: ChannelListener;
  private timers: NodeJS.Timeout[] = [];
  private draining = false;
  private readonly cleanups = new Set<Promise<void>>();
  private lastRenewal = Date.now();

  constructor(
    private readonly db: Db,
    private readonly connectionString: string,
    private readonly config: EngineConfig,
    private readonly log: Logger,
    /** Opens the secrets a step needs (Git credentials, sensitive variables). */
    readonly secrets: SecretBox,
    workerId?: string,
  ) {
    this.workerId = workerId ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    // A cancelled step's worker kills its process at once; a stop sent while this is down is noticed by the heartbeat.
    this.listener = new ChannelListener({
      connectionString,
      channel: STEP_STOP_CHANNEL,
      name: 'the step-stop listener',
      log,
      onNotification: (executionId) => executionId && this.stopAttempt(executionId, 'stopped'),
    });
  }

  async start(): Promise<void> {
    await startSandbox(this.config.sandbox, this.log);
    await this.listener.start();
    this.queue = await startQueue({
      connectionString: this.connectionString,
      concurrency: this.config.concurrency,
      pollMs: this.config.pollMs,
      log: this.log,
      executeStep: (p) => this.executeStep(p),
    });
    this.every(this.config.heartbeatMs, () => this.heartbeat());
    this.every(this.config.reapMs, () => this.reap());
    liveWorkers.add(this);
    this.log.info({ workerId: this.workerId, concurrency: this.config.concurrency }, 'started worker');
  }

  /**
   * stop drains: no new jobs; each running attempt's process is stopped and the attempt handed back
   * to the queue (QUEUED again) for another worker; then the queue's pool shuts down.
   */
  async stop(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    liveWorkers.delete(this);
    for (const id of this.running.keys()) this.stopAttempt(id, 'drain');
    await this.queue?.stop();
    for (const timer of this.timers) clearInterval(timer);
    await this.listener.close();
    await Promise.all(this.cleanups);
    await this.config.sandbox.close();
    this.log.debug({ workerId: this.workerId }, 'stopped worker');
  }

  /**
   * track keeps a step's workspace removal, which runs beside (and after) its outcome's commit: its
   * processes are gone by then, so neither the commit nor the job's slot waits for it; stop() does.
   */
  private track(cleanup: Promise<void>, executionId: string) {
    const done = cleanup.catch((err) => this.log.warn({ err, executionId }, "failed to remove a step's workspace")).finally(() => this.cleanups.delete(done));
    this.cleanups.add(done);
  }

  get activeAttempts(): number {
    return this.running.size;
  }

  /** Steps this worker runs at once. */
  get concurrency(): number {
    return this.config.concurrency;
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

  private retry(what: string, maxElapsedMs?: number, signal?: AbortSignal): RetryOptions {
    return {
      maxElapsedMs,
      signal,
      onRetry: (error, attempt, delayMs) =>
        this.log.warn({ err: error, workerId: this.workerId, attempt, delayMs }, `${what}: retrying after a database fault`),
    };
  }

  private stopAttempt(executionId: string, reason: StopReason) {
    const attempt = this.running.get(executionId);
    if (!attempt || attempt.reason) return;
    attempt.reason = reason;
    attempt.process.abort();
  }

  private async heartbeat() {
    const held = [...this.running].flatMap(([id, a]) => (a.leaseEpoch === undefined ? [] : [{ id, leaseEpoch: a.leaseEpoch }]));
    let renewed: Set<string>;
    try {
      renewed = await renewHeldLeases(this.db, this.workerId, held, this.config.leaseMs, this.retry('heartbeat', this.config.heartbeatMs));
      this.lastRenewal = Date.now();
    } catch (error) {
      // Cut off from the database for longer than a lease: another worker's reaper may fail these
      // attempts over, so their processes must not go on running beside the retries. An attempt whose
      // process already exited keeps trying to commit its outcome; the lease epoch decides.
      if (Date.now() - this.lastRenewal > this.config.leaseMs) for (const { id } of held) this.stopAttempt(id, 'stopped');
      throw error;
    }
    for (const { id, leaseEpoch } of held) {
      const attempt = this.running.get(id);
      if (renewed.has(id) || !attempt || attempt.leaseEpoch !== leaseEpoch) continue;
      this.log.info({ workerId: this.workerId, stepExecutionId: id }, 'no longer holds the lease of a step (cancelled, or failed over); stopping it');
      this.stopAttempt(id, 'stopped');
      attempt.lease.abort();
    }
  }

  private async reap() {
    const retry = this.retry('reaper', this.config.reapMs);
    const lost = await reapLostSteps(this.db, this.workerId, retry);
    if (lost.length) this.log.warn({ workerId: this.workerId, executions: lost }, 'failed over attempts of a lost worker');
    await redispatchStaleSteps(this.db, this.config.redispatchMs, retry);
  }

  private async executeStep({ stepExecutionId: id, runId }: StepExecutePayload): Promise<void> {
    if (this.draining) throw new Error('worker is draining');
    // A duplicate job of an attempt this worker already has in hand: the first one carries it.
    if (this.running.has(id)) return;
    const attempt: RunningAttempt = { process: new AbortController(), lease: new AbortController() };
    this.running.set(id, attempt);
    try {
      await withSpan('plinth.step.execute', { 'plinth.run_id': runId, 'plinth.step_execution_id': id, 'plinth.worker_id': this.workerId }, () =>
        this.runAttempt(id, runId, attempt),
      );
    } finally {
      // Only now, with the outcome committed (or the lease known lost), do heartbeats stop.
      this.running.delete(id);
      // And the sandbox makes up what this step took from it: not before, where it would delay the commit.
      if (!this.draining) this.config.sandbox.replenish();
    }
  }

  private async runAttempt(id: string, runId: string, attempt: RunningAttempt): Promise<void> {
    const claimed = await claimStep(this.db, id, runId, { id: this.workerId, leaseMs: this.config.leaseMs }, this.retry('claim', this.config.leaseMs));
    if (!claimed) return;
    attempt.leaseEpoch = claimed.leaseEpoch;
    const held: HeldAttempt = { executionId: id, workerId: this.workerId, leaseEpoch: claimed.leaseEpoch };
    const onRetry = (err: unknown) => this.log.warn({ err, executionId: id }, 'retrying a log flush');
    const sink = new LogSink(this.db, id, claimed.nextLogSeq, { limits: this.config.logLimits, retry: { onRetry } });
    let outcome: StepOutcome;
    try {
      outcome = await runStep(claimed, {
        sink,
        signal: attempt.process.signal,
        stopGrace: this.config.stopGrace,
        sandbox: this.config.sandbox,
        workerId: this.workerId,
        log: this.log,
        tofu: this.config.tofu,
        defaultStepTimeoutSeconds: this.config.defaultStepTimeoutSeconds,
        runners: this.config.runners ?? {},
        db: this.db,
        secrets: this.secrets,
        git: this.config.git,
        workRoot: this.config.workRoot,
        onSpawn: (pid) => this.spawnedPids.push(pid),
        defer: (cleanup) => this.track(cleanup, id),
      });
    } catch (error) {
      // Runners answer every failure a step's own code or input can cause; what is thrown is the
      // platform's (a database error, a path of the host), which the step's readers must not see.
      this.log.error({ err: error, executionId: id, runId }, 'a step failed on an internal error of its worker');
      outcome = {
        status: 'FAILED',
        error: engineError('Engine:Worker:ERROR', `The worker failed on an internal error while running this step; its log has the cause (executionId ${id})`),
      };
    }
    // Why the process ended, if this worker ended it. A stop that comes after the process exited on
    // its own changes nothing: its outcome is known and is committed (a drained worker must not hand
    // back a step that finished, nor a worker cut off from the database drop a known outcome). A
    // process that succeeded was not stopped, whatever arrived while it was exiting.
    const stoppedBy = outcome.status === 'SUCCEEDED' ? undefined : attempt.reason;
    if (stoppedBy) {
      if (stoppedBy === 'drain') sink.write('system', `worker ${this.workerId} is shutting down; the step goes back to the queue`);
      await sink.close();
      this.reportLostLines(sink, id);
      if (stoppedBy === 'drain') await handBackStep(this.db, held, runId, this.retry('hand-back', this.config.leaseMs));
      // Else killed because the attempt was cancelled or taken from this worker: whoever did so settled it.
      return;
    }
    await sink.settled();
    const committed = await this.commitOutcome(held, runId, outcome, attempt, sink);
    this.reportLostLines(sink, id);
    if (!committed)
      this.log.warn(
        { workerId: this.workerId, executionId: id, outcome: outcome.status },
        "the attempt was no longer this worker's; its outcome is not recorded",
      );
  }

  /**
   * commitOutcome commits the attempt's outcome with its last log lines. Should that fail for good, the
   * lines are stored as a flush would be (or counted lost, which fails a success) and the outcome is
   * committed alone. A lease known lost gives up: the attempt is another worker's now.
   */
  private async commitOutcome(held: HeldAttempt, runId: string, outcome: StepOutcome, attempt: RunningAttempt, sink: LogSink): Promise<boolean> {
    const retry = this.retry('completion', undefined, attempt.lease.signal);
    const unlessLeaseLost = (error: unknown) => {
      if (attempt.lease.signal.aborted) return false;
      throw error;
    };
    const tail = sink.takeTail();
    try {
      return await completeStep(this.db, held, runId, outcome, retry, tail);
    } catch (error) {
      if (!tail) return unlessLeaseLost(error);
      await sink.storeTail(tail);
      if (attempt.lease.signal.aborted) return false;
      this.log.warn({ err: error, executionId: held.executionId }, 'the outcome could not be committed with its last log lines; committing it alone');
      return completeStep(this.db, held, runId, sink.stats.linesLost ? withLostLines(outcome, sink) : outcome, retry).catch(unlessLeaseLost);
    }
  }

  private reportLostLines(sink: LogSink, executionId: string) {
    if (sink.lastError) this.log.error({ err: sink.lastError, executionId }, 'failed to store log lines');
  }
}
