import type { StepOutcome, ClaimedStep } from '../step-lifecycle.ts';
import { engineError } from '../engine-errors.ts';
import type { LogSink } from '../log-sink.ts';
import { logDetail, logStoreError } from './output-capture.ts';
import { SandboxUnavailableError, type StepSandbox, type StepWorkspace } from '../sandbox/index.ts';
import { MAX_FAILED_MEASURES, type DiskOverrun } from '../sandbox/disk-watch.ts';
import type { StopGrace } from '../sandbox/stop.ts';
import { allowEntryProblem, parseAllowList, type AllowList } from '../../platform/outbound/address-policy.ts';
import { runScript, type ScriptResult } from './script.ts';
import type { Db } from '../../platform/db/db.ts';
import type { SecretBox } from '../../platform/secrets/secret-box.ts';
import type { TofuSettings } from '../engine-config.ts';
import type { GitConfig } from '../../platform/git-config.ts';
import type { Logger } from '../../platform/logger.ts';
import { prepareCheckout } from './checkout.ts';
import type { PreparedStep } from './prepared-step.ts';
import type { ErrorBody } from '../../platform/schema.ts';

/**
 * The runner of a step type that lives outside the engine (the OpenTofu steps, src/opentofu/): given
 * the claimed attempt and its prepared workspace, it runs the step and says how it ended. The process
 * that starts a worker hands it these (EngineConfig.runners): the engine imports no step domain.
 */
export type StepRunner = (claimed: ClaimedStep, ctx: RunnerContext, prepared: PreparedStep) => Promise<StepOutcome>;
export type StepRunners = Partial<Record<'opentofu.plan' | 'opentofu.apply' | 'opentofu.destroy', StepRunner>>;

export interface RunnerContext {
  sink: LogSink;
  /** For runners that read what their step needs (a stack's source, its variables, a state credential). */
  db: Db;
  /** Opens the sealed secrets a step needs; nothing sealed reaches a step's environment unless it needs it. */
  secrets: SecretBox;
  signal: AbortSignal;
  stopGrace: StopGrace;
  sandbox: StepSandbox;
  /** The checkout's timeout and per-source cache, and what mints Git credentials. */
  git: GitConfig;
  /** PLINTH_WORKER_WORK_ROOT: where the Git cache lives unless PLINTH_GIT_CACHE_DIR says otherwise. */
  workRoot: string | undefined;
  workerId: string;
  /** The worker's own log, for what a runner does on the host: never shown to a step's readers. */
  log: Logger;
  /** The OpenTofu CLI and the state backend's address (PLINTH_TOFU_BIN, PLINTH_STATE_BACKEND_URL). */
  tofu: TofuSettings;
  /** The time limit of a step that sets no timeoutSeconds (PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS). */
  defaultStepTimeoutSeconds: number;
  runners: StepRunners;
  onSpawn?: (pid: number) => void;
  /** Takes work that may finish after the outcome is committed (removing a workspace whose processes are gone). */
  defer?: (work: Promise<void>) => void;
}

function parseNarrowing(entries: string[]): AllowList {
  return parseAllowList(
    entries.filter((entry) => !allowEntryProblem(entry)),
    'egressAllow',
  );
}

/** The PATH every step starts with: fixed, so nothing of the worker's environment reaches a step. */
export const STEP_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Variables every script sees, built from nothing: none of the worker's environment is passed on (the
 * sandbox adds HOME, its workspace). A step gets only what its pipeline and run give it.
 */
function scriptEnv(claimed: ClaimedStep, prepared: PreparedStep, extra: Record<string, unknown> | undefined): Record<string, string> {
  const env: Record<string, string> = {
    PATH: STEP_PATH,
    PLINTH_RUN_ID: claimed.run.id,
    PLINTH_STEP_ID: claimed.step.id,
    PLINTH_STEP_EXECUTION_ID: claimed.executionId,
    PLINTH_ATTEMPT_EPOCH: String(claimed.run.attempt_epoch),
    PLINTH_RETRY_ATTEMPT: String(claimed.retryAttempt),
    PLINTH_ACTION: claimed.run.action ?? '',
    PLINTH_STACK_ID: claimed.run.stack_id ?? '',
    PLINTH_INPUTS: JSON.stringify(claimed.run.input ?? {}),
    ...(prepared.checkout ? { PLINTH_COMMIT_SHA: prepared.checkout.commitSha, PLINTH_CHECKOUT_DIR: `/workspace/${prepared.checkout.workingDirectory}` } : {}),
  };
  for (const [k, v] of Object.entries(extra ?? {})) env[k] = String(v);
  return env;
}

export interface StepTimeLimit {
  seconds: number;
  /** The step's own timeoutSeconds, or the worker's default. */
  fromStep: boolean;
}

/** stepTimeLimit is how long an attempt of the step may run: its timeoutSeconds, else the worker's default. */
export function stepTimeLimit(claimed: ClaimedStep, ctx: RunnerContext): StepTimeLimit {
  const own = claimed.step.timeoutSeconds;
  return own ? { seconds: own, fromStep: true } : { seconds: ctx.defaultStepTimeoutSeconds, fromStep: false };
}

/** The error of an attempt stopped at its time limit, saying which limit it was. */
export function timedOut(limit: StepTimeLimit): ErrorBody {
  const which = limit.fromStep
    ? `its timeoutSeconds (${limit.seconds})`
    : `the default time limit of a step without timeoutSeconds (${limit.seconds} seconds, PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS)`;
  return engineError('Engine:Step:TIMED_OUT', `The step ran longer than ${which}`);
}

async function runScriptStep(claimed: ClaimedStep, ctx: RunnerContext, prepared: PreparedStep): Promise<StepOutcome> {
  const w = claimed.step.with ?? {};
  // A step of a stack with a source starts in the stack's path of the checkout, unless it says otherwise.
  const workingDirectory = typeof w.workingDirectory === 'string' ? w.workingDirectory : prepared.checkout?.workingDirectory;
  const limit = stepTimeLimit(claimed, ctx);
  const result: ScriptResult = await runScript({
    command: String(w.command),
    env: scriptEnv(claimed, prepared, w.env as Record<string, unknown> | undefined),
    workingDirectory,
    timeoutMs: limit.seconds * 1000,
    stopGrace: ctx.stopGrace,
    workspace: prepared.workspace,
    sink: ctx.sink,
    signal: ctx.signal,
    onSpawn: ctx.onSpawn,
  });
  // Every earlier batch committed (or counted lost) before the outcome is decided: a lost line fails the
  // step. The last lines are written by the transaction that commits the outcome (worker.ts).
  await ctx.sink.settled();
  const round = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms * 1000) / 1000);
  const statusDetail = {
    exitCode: result.exitCode,
    signal: result.signal,
    processMs: round(result.processMs),
    workerId: ctx.workerId,
    ...logDetail(ctx.sink.stats),
  };
  const outputData = { exitCode: result.exitCode };
  if (result.spawnError)
    return {
      status: 'FAILED',
      statusDetail,
      error: engineError('Engine:Script:SPAWN_FAILED', `The step's process could not be started (${result.spawnError})`),
    };
  if (result.timedOut) {
    return {
      status: 'FAILED',
      statusDetail,
      outputData,
      error: timedOut(limit),
    };
  }
  if (result.exitCode === 0 && ctx.sink.stats.linesLost) return { status: 'FAILED', statusDetail, outputData, error: logStoreError(ctx.sink.stats) };
  if (result.exitCode === 0) return { status: 'SUCCEEDED', statusDetail, outputData };
  const how = result.exitCode === null ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
  return { status: 'FAILED', statusDetail, outputData, error: engineError('Engine:Script:FAILED', `The command ${how}`, { exitCode: result.exitCode }) };
}

/** The runner of each step type that runs on a worker, given the attempt's prepared workspace. */
function runPrepared(claimed: ClaimedStep, ctx: RunnerContext, prepared: PreparedStep): Promise<StepOutcome> {
  switch (claimed.step.type) {
    case 'script':
      return runScriptStep(claimed, ctx, prepared);
    case 'opentofu.plan':
    case 'opentofu.apply':
    case 'opentofu.destroy': {
      const runner = ctx.runners[claimed.step.type];
      if (runner) return runner(claimed, ctx, prepared);
      const error = engineError('Engine:StepType:NOT_IMPLEMENTED', `This worker was started without a runner for ${claimed.step.type} steps`, {
        stepType: claimed.step.type,
      });
      return Promise.resolve({ status: 'FAILED', error });
    }
    default:
      throw new Error(`no runner for ${claimed.step.type}`);
  }
}

/**
 * runStep executes one claimed attempt by its step type: it opens the attempt's workspace once, checks
 * the stack's source out into it when the run's stack has one (the same commit for every step of the
 * run), hands the prepared workspace to the step's runner, and disposes of it afterwards. `script` and
 * the OpenTofu steps run here; `module.deploy` fails with a clear typed error rather than pretending to
 * succeed.
 */
export async function runStep(claimed: ClaimedStep, ctx: RunnerContext): Promise<StepOutcome> {
  const envType = claimed.executionEnvironmentType ?? 'LOCAL';
  if (envType !== 'LOCAL') {
    return {
      status: 'FAILED',
      error: engineError('Engine:ExecutionEnvironment:UNSUPPORTED', `This worker runs steps only in LOCAL execution environments, not ${envType}`, {
        type: envType,
      }),
    };
  }
  switch (claimed.step.type) {
    case 'script':
    case 'opentofu.plan':
    case 'opentofu.apply':
    case 'opentofu.destroy':
      break;
    case 'module.deploy':
      return {
        status: 'FAILED',
        error: engineError('Engine:StepType:NOT_IMPLEMENTED', `Step type ${claimed.step.type} is not implemented by this engine yet`, {
          stepType: claimed.step.type,
        }),
      };
    case 'approval':
      // Approvals are resolved by the engine itself and never dispatched to a worker.
      return { status: 'FAILED', error: engineError('Engine:StepType:NOT_DISPATCHABLE', 'An approval step cannot run on a worker') };
  }
  const started = performance.now();
  let workspace;
  try {
    // Parsed when the environment was saved; an entry that no longer parses narrows to nothing rather than failing open.
    workspace = await ctx.sandbox.open({ egressNarrowing: claimed.egressAllow ? parseNarrowing(claimed.egressAllow) : undefined });
  } catch (error) {
    if (error instanceof SandboxUnavailableError) return { status: 'FAILED', error: engineError(error.code, error.message) };
    throw error;
  }
  try {
    const outcome = await checkOutAndRun(claimed, ctx, workspace, started);
    const overrun = workspace.diskExceeded;
    if (!overrun) return outcome;
    // Whatever the runner made of its killed processes, the step failed for the disk it took.
    const { outputData: _partial, ...killed } = outcome;
    return { ...killed, status: 'FAILED', error: diskLimitError(overrun) };
  } finally {
    // Every process of the step is gone by now: removing its files can go on beside the outcome's commit.
    const disposed = workspace.dispose();
    if (ctx.defer) ctx.defer(disposed);
    else await disposed;
  }
}

async function checkOutAndRun(claimed: ClaimedStep, ctx: RunnerContext, workspace: StepWorkspace, started: number): Promise<StepOutcome> {
  const checkout = await prepareCheckout(claimed, ctx, workspace);
  if ('outcome' in checkout) {
    await ctx.sink.flush();
    return checkout.outcome;
  }
  const prepareMs = performance.now() - started;
  const outcome = await runPrepared(claimed, ctx, { workspace, checkout: checkout.checkout });
  if (outcome.statusDetail) outcome.statusDetail.prepareMs = Math.round(prepareMs * 1000) / 1000;
  return outcome;
}

/** The error of a step stopped for the disk it took, with what it took then. */
function diskLimitError(overrun: DiskOverrun): ErrorBody {
  const limits = { limitMb: overrun.diskMb, limitFiles: overrun.diskFiles };
  if (overrun.unmeasurable)
    return engineError(
      'Engine:Step:DISK_LIMIT',
      `The step's disk use could not be measured ${MAX_FAILED_MEASURES} times in a row, so it was stopped as if past its limits (${overrun.diskMb} MiB, PLINTH_STEP_DISK_MB; ${overrun.diskFiles} files, PLINTH_STEP_DISK_FILES)`,
      { unmeasurable: true, ...limits },
    );
  // Past the file limit the walk stops, and the blocks are not measured.
  if (overrun.files > overrun.diskFiles)
    return engineError(
      'Engine:Step:DISK_LIMIT',
      `The step held more than ${overrun.diskFiles} files (PLINTH_STEP_DISK_FILES, with the descriptors it held open) and was stopped`,
      { files: overrun.files, ...limits },
    );
  const usedMb = Math.ceil(overrun.bytes / (1024 * 1024));
  return engineError('Engine:Step:DISK_LIMIT', `The step took ${usedMb} MiB of disk, more than ${overrun.diskMb} MiB (PLINTH_STEP_DISK_MB), and was stopped`, {
    usedMb,
    files: overrun.files,
    ...limits,
  });
}
