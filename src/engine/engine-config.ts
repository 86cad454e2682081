import { STOPPING_STEP_WINDOW_MS, type StopGrace } from './sandbox/stop.ts';
import { MAX_TIMEOUT_SECONDS } from '../pipelines/pipelines.schema.ts';
import { loadConfig } from '../platform/config.ts';
import { loadLogLimits, type LogLimits } from './log-sink.ts';
import { createSandbox, type StepSandbox } from './sandbox/index.ts';
import { loadSandboxSettings } from './sandbox/settings.ts';
import { loadGitConfig, type GitConfig } from '../platform/git-config.ts';
import { positiveIntFrom } from '../platform/env-settings.ts';
import type { StepRunners } from './runners/index.ts';
import { workRootFrom } from '../platform/work-dirs.ts';

/** Six hours, as CI services allow a job by default: no step runs for ever unless it says how long. */
const DEFAULT_STEP_TIMEOUT_SECONDS = 6 * 3600;
/** A day: the longest wait for a state lock an operator may set. */
const MAX_LOCK_TIMEOUT_MS = 24 * 3600_000;

/**
 * The worker's knobs, read from the environment (documented in docs/engine.md). With the defaults a
 * lost step is recovered well within a minute: a dead worker's lease expires after at most 30 s, a job
 * it took without claiming is redispatched after 20 s, and the reaper looks every 5 s, so every lost
 * step is recovered within 35 s. Tests shrink them to run in seconds.
 */
export interface EngineConfig {
  /** Step executions one worker process runs at once (graphile-worker concurrency). */
  concurrency: number;
  /** How long a claimed attempt stays ours without a heartbeat. */
  leaseMs: number;
  /** How often a worker renews the leases of its running attempts. */
  heartbeatMs: number;
  /** How often a worker looks for expired leases and stale dispatches. */
  reapMs: number;
  /**
   * A QUEUED execution whose job was taken this long ago without a claim (its worker died), or whose
   * job is gone, is dispatched again (idempotent).
   */
  redispatchMs: number;
  /** graphile-worker's fallback poll when LISTEN/NOTIFY is missed. */
  pollMs: number;
  /** A stopped step's processes: SIGINT, SIGTERM after `graceMs`, SIGKILL `termGraceMs` later (sandbox/stop.ts). */
  stopGrace: StopGrace;
  /** Where each attempt gets its fresh working directory. */
  workRoot: string | undefined;
  /** Per-step log limits: PLINTH_STEP_LOG_MAX_BYTES, PLINTH_STEP_LOG_MAX_LINES. */
  logLimits: LogLimits;
  /** PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS: the time limit of an attempt whose step sets no timeoutSeconds. */
  defaultStepTimeoutSeconds: number;
  /** Where and as whom step processes run (PLINTH_SANDBOX*, PLINTH_STEP_*), probed at worker start. */
  sandbox: StepSandbox;
  /** The OpenTofu CLI and the state backend's address its steps use (docs/opentofu.md). */
  tofu: TofuSettings;
  /** The checkout's timeout and cache, and what mints Git credentials (PLINTH_GIT_*, docs/git.md). */
  git: GitConfig;
  /** The runners of step types outside the engine, given by the process that starts the worker; none: such steps fail. */
  runners?: StepRunners;
}

export interface TofuSettings {
  /** PLINTH_TOFU_BIN: the OpenTofu executable, a path or a name on the steps' PATH. */
  bin: string;
  /** PLINTH_STATE_BACKEND_URL: the API's base URL as a step reaches it; default PLINTH_PUBLIC_URL. */
  backendUrl: string;
  /**
   * PLINTH_TOFU_LOCK_TIMEOUT_MS: how long plan, apply and destroy wait for the state lock. By default as
   * long as a stopped step's OpenTofu may still release it (STOPPING_STEP_WINDOW_MS): a cancelled run's
   * apply is still writing state when the stack's next run starts.
   */
  lockTimeoutMs: number;
}

/**
 * loadEngineConfig reads the worker's settings. `publicUrl` is the API's, from the process's Config:
 * read again from `env` only when not given, since a process has scrubbed its secrets from its
 * environment by the time its worker starts, and reading the whole Config again would miss them.
 */
export function loadEngineConfig(env: NodeJS.ProcessEnv = process.env, publicUrl?: string): EngineConfig {
  const leaseMs = positiveIntFrom(env, 'PLINTH_WORKER_LEASE_MS', 30_000);
  const heartbeatMs = positiveIntFrom(env, 'PLINTH_WORKER_HEARTBEAT_MS', Math.max(1, Math.floor(leaseMs / 3)));
  if (heartbeatMs >= leaseMs) throw new Error('PLINTH_WORKER_HEARTBEAT_MS must be shorter than PLINTH_WORKER_LEASE_MS');
  const workRoot = workRootFrom(env);
  const concurrency = positiveIntFrom(env, 'PLINTH_WORKER_CONCURRENCY', 16);
  const backendUrl = (env.PLINTH_STATE_BACKEND_URL || publicUrl || loadConfig(env).publicUrl).replace(/\/+$/, '');
  return {
    concurrency,
    leaseMs,
    heartbeatMs,
    reapMs: positiveIntFrom(env, 'PLINTH_WORKER_REAP_MS', 5_000),
    redispatchMs: positiveIntFrom(env, 'PLINTH_WORKER_REDISPATCH_MS', 20_000),
    pollMs: positiveIntFrom(env, 'PLINTH_WORKER_POLL_MS', 2_000),
    stopGrace: {
      graceMs: positiveIntFrom(env, 'PLINTH_WORKER_KILL_GRACE_MS', 60_000),
      termGraceMs: positiveIntFrom(env, 'PLINTH_WORKER_TERM_GRACE_MS', 10_000),
    },
    logLimits: loadLogLimits((name, fallback) => positiveIntFrom(env, name, fallback)),
    defaultStepTimeoutSeconds: positiveIntFrom(env, 'PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS', DEFAULT_STEP_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS),
    workRoot,
    sandbox: createSandbox(loadSandboxSettings(env, workRoot, concurrency, [backendUrl])),
    tofu: {
      bin: env.PLINTH_TOFU_BIN || 'tofu',
      backendUrl,
      lockTimeoutMs: positiveIntFrom(env, 'PLINTH_TOFU_LOCK_TIMEOUT_MS', STOPPING_STEP_WINDOW_MS, MAX_LOCK_TIMEOUT_MS),
    },
    git: loadGitConfig(env),
  };
}
