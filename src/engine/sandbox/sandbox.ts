import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { Logger } from '../../platform/logger.ts';
import type { AllowList } from '../../platform/outbound/address-policy.ts';
import type { EgressPolicy } from './egress.ts';
import type { DiskOverrun } from './disk-watch.ts';

/**
 * The step sandbox: where and as whom a step's processes run. Every runner (script today; OpenTofu and
 * Git next) starts its processes through a StepSandbox, so another mechanism (a container, a cloud
 * executor) is one more implementation of this interface. docs/sandbox.md describes it.
 */

/** The only PATH of the programs the sandbox runs on the host as the worker: never the worker's, never the tenant's. */
export const SYSTEM_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * A worker run by a normal user builds every sandbox inside user namespaces (rootless): the init is
 * root only there, and each step is the worker's user on the host (init-script.ts). The spawner, a
 * process of its own in plain JavaScript, decides the same way.
 */
export const ROOTLESS = process.getuid?.() !== 0;

/** `PLINTH_SANDBOX`: `auto` isolates when the host can and refuses script steps when it cannot. */
export const SANDBOX_MODES = ['auto', 'namespaces', 'off'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/**
 * `PLINTH_SANDBOX_NETWORK`: `policy` gives each step a network namespace of its own whose only way out
 * is the worker's egress proxy (egress.ts); `none` an empty one; `host` shares the worker host's network.
 */
export const SANDBOX_NETWORKS = ['policy', 'none', 'host'] as const;
export type SandboxNetwork = (typeof SANDBOX_NETWORKS)[number];

export interface StepLimits {
  /** Processes and threads at once (cgroup pids, and RLIMIT_NPROC of the step's own uid). */
  maxProcesses: number;
  memoryMb: number;
  /** CPU time per wall second, in CPUs (1.5 = one and a half cores). */
  cpus: number;
  /** What the step may take of the host's disk, in MiB and in files (disk-watch.ts). */
  diskMb: number;
  diskFiles: number;
}

export interface SandboxSettings {
  mode: SandboxMode;
  network: SandboxNetwork;
  /** What a step may reach under the `policy` network. */
  egress: EgressPolicy;
  limits: StepLimits;
  /** Each running step gets its own uid from [uidBase, uidBase + uidCount). */
  uidBase: number;
  uidCount: number;
  /** Where workspaces are made (PLINTH_WORKER_WORK_ROOT, else the OS temp directory). */
  workRoot: string | undefined;
  /** Namespaced sandboxes a worker keeps built ahead, each for one step (PLINTH_SANDBOX_POOL; 0: none). */
  poolSize: number;
}

/** What `GET /health` and the worker's start line say about the isolation of this process's steps. */
export interface IsolationReport {
  /** `namespaces`: steps are isolated; `off`: the operator's single-tenant opt-out; `unavailable`: script steps fail. */
  mode: 'namespaces' | 'off' | 'unavailable' | 'no-worker';
  requested: SandboxMode | null;
  /** `root`: each step a uid of its own on the host; `rootless`: a worker run by a normal user, each step in user namespaces of its own. */
  privileges: 'root' | 'rootless' | null;
  network: SandboxNetwork | null;
  cgroup: 'v2' | 'v1' | 'none' | null;
  /** Limits actually enforced on every step; null where this host cannot enforce one. */
  limits: { maxProcesses: number | null; memoryMb: number | null; cpus: number | null };
  detail: string;
}

/**
 * A host path made visible to one process at `target`: a Git source's cache, the configured OpenTofu
 * binary. `target` is absolute and lies under `/plinth/` (anything else is refused, as are overlapping
 * targets). Namespaced, it is a bind mount, `nosuid,nodev`, read-only unless `writable`; a writable
 * source must be writable by the step (rootless, by the worker's own user, which the step is on the host). Unisolated (`off`), nothing can be
 * mounted: the process reaches the host path itself, read-only is not enforced, and the runner asks
 * `StepWorkspace.pathOf` where a target is.
 */
export interface StepBind {
  source: string;
  target: string;
  writable: boolean;
}

export interface StepProcessSpec {
  command: string;
  env: Record<string, string>;
  /** Relative to the workspace; created when missing. */
  workingDirectory?: string;
  binds?: StepBind[];
}

/**
 * What a runner sees of a step's process: a ChildProcess, or one started by the worker's spawner
 * (spawner.ts) that behaves like one. `exit` (code, signal), `close` once it exited and both pipes
 * drained, `error` when it could not start.
 */
export interface StepChild extends EventEmitter {
  readonly pid?: number | undefined;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
}

/** One running step process tree. */
export interface SandboxedProcess {
  /** Its stdout and stderr carry the step's output; `close` fires once both drained. */
  readonly child: StepChild;
  /** Asks every process of the step to stop (SIGTERM); `kill` follows after the grace period. */
  terminate(): void;
  /** Interrupts every process of the step (SIGINT): how OpenTofu is asked to stop gracefully (state written, lock released). */
  interrupt(): void;
  /** Kills every process of the step (SIGKILL). */
  kill(): void;
}

/**
 * A step's workspace. A runner may `spawn` several processes in it one after another (a checkout, then
 * `tofu init`, then `tofu plan`): each runs in namespaces of its own (its own `/tmp`, its own binds),
 * as the same uid and in the same cgroup, and only the workspace's files persist from one to the next.
 * dispose() ends them all; the workspace's files and processes then never reach another step (the
 * namespaced sandbox may hand its emptied claim, uid and cgroup to the next step: docs/engine.md).
 */
export interface StepWorkspace {
  /** The uid the step's processes run as (the worker's own when unisolated). */
  readonly uid: number;
  /** Starts a process; resolves once it runs (or failed to start: its child then emits `error`). */
  spawn(spec: StepProcessSpec): Promise<SandboxedProcess>;
  /**
   * Where a process spawned with `binds` finds `target` (a path under one of their targets): `target`
   * itself when namespaced, the host path when unisolated. Throws when `target` is under no bind.
   */
  pathOf(target: string, binds: readonly StepBind[]): string;
  /**
   * Set once the step took more of the disk than its limits allow (StepLimits), or could not be
   * measured: every process of the step was killed then, and a spawn after that is killed as it starts.
   */
  readonly diskExceeded: DiskOverrun | undefined;
  /** Kills every process of the step still running (of every spawn) and empties or removes the workspace (and its cgroup). */
  dispose(): Promise<void>;
}

export interface OpenOptions {
  /**
   * Narrows what the step may reach under the `policy` network to what this list also allows (the
   * state backend stays reachable): an execution environment's `egressAllow`.
   */
  egressNarrowing?: AllowList;
}

export interface StepSandbox {
  /** Probes the mechanism once (memoized) and reports what is active; `log` hears of refused egress. */
  start(log?: Logger): Promise<IsolationReport>;
  /** Makes a fresh workspace; throws SandboxUnavailableError when steps cannot run isolated here. */
  open(options?: OpenOptions): Promise<StepWorkspace>;
  /**
   * Makes up what the sandbox keeps ready between steps (the warm pool) for the steps taken from it.
   * The worker calls it once a step's outcome is committed, so that this work (a spawn, which blocks
   * the event loop until the child has exec'd, and the setup's processes) never stands between a step's
   * exit and its outcome's commit.
   */
  replenish(): void;
  /** Releases what the sandbox keeps ready between steps (the warm pool); a later open() starts over. */
  close(): Promise<void>;
}

/** Script steps refused because no isolation works on this host and the operator did not opt out. */
export class SandboxUnavailableError extends Error {
  readonly code = 'Engine:Sandbox:UNAVAILABLE';
}
