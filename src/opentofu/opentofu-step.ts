import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { StepBind } from '../engine/sandbox/index.ts';
import type { ErrorBody } from '../platform/schema.ts';
import { treeProblems } from '../platform/http/input-rules.ts';
import { engineError, type EngineErrorCode } from '../engine/engine-errors.ts';
import type { ClaimedStep, StepOutcome } from '../engine/step-lifecycle.ts';
import { logDetail, logStoreError } from '../engine/runners/output-capture.ts';
import type { PreparedStep } from '../engine/runners/prepared-step.ts';
import { stepTimeLimit, timedOut, type RunnerContext, type StepRunners, type StepTimeLimit } from '../engine/runners/index.ts';
import { findPlan, findSealedVariables, findStackForStep, recordApply, recordLatestRun, upsertPlan, type StackForStep } from './opentofu.repo.ts';
import {
  FIND_BACKEND_OVERRIDES,
  INIT_BACKEND_FLAGS,
  overridesDeclaringBackend,
  READ_RECORDED_BACKEND,
  recordedBackendProblem,
  WRITE_BACKEND_OVERRIDE,
  WRITE_SENSITIVE_OVERRIDE,
} from './backend-guard.ts';
import { mintRunCredential } from './run-credential.ts';
import { maskSecrets, MaskTooLargeError, secretPieces } from './masking.ts';
import { resolveReferenceValues } from './reference-values.ts';
import { runTofuProcess, type TofuProcessContext, type TofuProcessResult } from './tofu-process.ts';
import { stackOutputs, summarizePlan } from './tofu-json.ts';

/** The fixed PATH of every step (as script steps get): nothing of the worker's environment reaches OpenTofu. */
const STEP_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Files Plinth keeps beside the stack's code, in the workspace's home (never read from the worker's side). */
const PLAN_FILE = '"$HOME/.plinth/plan.tfplan"';
const VAR_FILE = '"$HOME/.plinth/plinth.tfvars.json"';
/** Largest `show -json`, `output -json` or plan file taken out of a step. */
const MAX_CAPTURE_BYTES = 64 * 1024 * 1024;
/** Raw plan bytes per process that writes the saved plan back into an apply's workspace (an environment variable stays well under 128 KiB). */
const PLAN_CHUNK_BYTES = 72 * 1024;

/** Where a configured OpenTofu path is shown to steps: one file, read-only (OpenTofu is a single binary). */
const TOFU_TARGET = '/plinth/bin/tofu';

/**
 * tofuBinary says how steps run PLINTH_TOFU_BIN: a name is looked up on the steps' PATH; a path is bound
 * read-only into each process (the sandbox shows steps only /usr, /bin and /lib* of the host otherwise).
 */
function tofuBinary(bin: string, prepared: PreparedStep): { command: string; binds: StepBind[] } | undefined {
  if (!bin.includes('/')) return { command: bin, binds: [] };
  let source: string;
  try {
    source = realpathSync(bin);
  } catch {
    return undefined;
  }
  const binds = [{ source, target: TOFU_TARGET, writable: false }];
  return { command: prepared.workspace.pathOf(TOFU_TARGET, binds), binds };
}

interface StepRun {
  claimed: ClaimedStep;
  binds: StepBind[];
  ctx: RunnerContext;
  /** The step's time limit, which every command of it shares (proc.deadline). */
  timeLimit: StepTimeLimit;
  proc: TofuProcessContext;
  env: Record<string, string>;
  workingDirectory: string;
  stack: StackForStep;
  variables: Record<string, unknown>;
  /** The stack's sensitive variables: their names (marked sensitive for OpenTofu) and values (masked). */
  sensitive: { names: string[]; values: string[] };
}

function fail(code: EngineErrorCode, message: string, metadata?: Record<string, unknown>): StepOutcome {
  return { status: 'FAILED', error: engineError(code, message, metadata) };
}

/**
 * The stack's variables (a module deploy's: the inputs it deploys), its sensitive ones (opened), the
 * step's, then the run's inputs: later ones win. Reference values then become the producers' outputs.
 */
async function variablesOf(
  claimed: ClaimedStep,
  ctx: RunnerContext,
  stack: StackForStep,
): Promise<{ values: Record<string, unknown>; sensitive: StepRun['sensitive'] } | StepOutcome> {
  const sealed = await findSealedVariables(ctx.db, stack.id);
  const sensitive = Object.fromEntries(
    sealed.map((v) => [v.name, JSON.parse(ctx.secrets.open(v.sealed_value, `stack_sensitive_variables:${stack.id}:${v.name}`)) as unknown]),
  );
  const fromStep = (claimed.step.with?.variables ?? {}) as Record<string, unknown>;
  const deployed = claimed.run.data?.module_input;
  const base = deployed && typeof deployed === 'object' && !Array.isArray(deployed) ? (deployed as Record<string, unknown>) : stack.variables;
  const merged = { ...base, ...sensitive, ...fromStep, ...(claimed.run.input ?? {}) };
  const resolved = await resolveReferenceValues(ctx.db, ctx.secrets, stack.organization_id, merged);
  if (resolved.problems.length > 0) {
    return fail('OpenTofu:Reference:UNRESOLVED', `The stack's variables reference outputs that cannot be read: ${resolved.problems.join('; ')}`, {
      problems: resolved.problems,
    });
  }
  const secrets = [...Object.values(sensitive), ...resolved.sensitive].flatMap((v) => (typeof v === 'string' ? [v] : [JSON.stringify(v)]));
  return { values: resolved.values, sensitive: { names: [...new Set([...Object.keys(sensitive), ...resolved.sensitiveNames])], values: secrets } };
}

function workingDirectoryOf(claimed: ClaimedStep, prepared: PreparedStep): string {
  const base = prepared.checkout?.workingDirectory ?? '.';
  const own = claimed.step.with?.workingDirectory;
  return path.posix.normalize(typeof own === 'string' ? path.posix.join(base, own) : base);
}

/** The step's log mask, or the failed outcome of a step whose sensitive values are too large to mask. */
function maskOrFailure(secrets: string[]): ReturnType<typeof maskSecrets> | StepOutcome {
  try {
    return maskSecrets(secrets);
  } catch (error) {
    if (error instanceof MaskTooLargeError) return fail('OpenTofu:Mask:TOO_LARGE', error.message, { bytes: error.bytes });
    throw error;
  }
}

/** The OpenTofu step types' runner, for the process that starts a worker to hand it (EngineConfig.runners). */
export const OPENTOFU_RUNNERS: StepRunners = { 'opentofu.plan': runOpenTofuStep, 'opentofu.apply': runOpenTofuStep, 'opentofu.destroy': runOpenTofuStep };

/**
 * runOpenTofuStep runs `opentofu.plan`, `opentofu.apply` or `opentofu.destroy` in the step's prepared
 * workspace, against the stack's state in Plinth with a credential minted for this step alone (revoked
 * when the step ends). docs/opentofu.md describes each step.
 */
export async function runOpenTofuStep(claimed: ClaimedStep, ctx: RunnerContext, prepared: PreparedStep): Promise<StepOutcome> {
  const stackId = claimed.run.stack_id;
  const stack = stackId ? await findStackForStep(ctx.db, stackId) : undefined;
  if (!stack) return fail('OpenTofu:Step:NO_STACK', 'OpenTofu steps run only in the runs of a stack');
  const binary = tofuBinary(ctx.tofu.bin, prepared);
  if (!binary) return fail('OpenTofu:Command:FAILED', `PLINTH_TOFU_BIN (${ctx.tofu.bin}) does not exist on worker ${ctx.workerId}`);
  const timeLimit = stepTimeLimit(claimed, ctx);
  const timeoutMs = timeLimit.seconds * 1000;
  const credential = await mintRunCredential(ctx.db, {
    organizationId: stack.organization_id,
    stackId: stack.id,
    runId: claimed.run.id,
    stepExecutionId: claimed.executionId,
    timeoutMs,
  });
  try {
    const variables = await variablesOf(claimed, ctx, stack);
    if ('status' in variables) return variables;
    const { values, sensitive } = variables;
    const mask = maskOrFailure([...sensitive.values, credential.token]);
    if ('status' in mask) return mask;
    const state = `${ctx.tofu.backendUrl}/state-backend/stack-${stack.id}`;
    const run: StepRun = {
      claimed,
      binds: binary.binds,
      ctx,
      timeLimit,
      stack,
      variables: values,
      sensitive,
      workingDirectory: workingDirectoryOf(claimed, prepared),
      proc: {
        workspace: prepared.workspace,
        sink: ctx.sink,
        mask,
        signal: ctx.signal,
        deadline: Date.now() + timeoutMs,
        stopGrace: ctx.stopGrace,
        onSpawn: ctx.onSpawn,
      },
      env: {
        PATH: STEP_PATH,
        TF_IN_AUTOMATION: '1',
        TF_INPUT: '0',
        TF_HTTP_ADDRESS: state,
        TF_HTTP_LOCK_ADDRESS: `${state}/lock`,
        TF_HTTP_UNLOCK_ADDRESS: `${state}/lock`,
        TF_HTTP_USERNAME: 'plinth-run',
        TF_HTTP_PASSWORD: credential.token,
        PLINTH_TOFU: binary.command,
        PLINTH_RUN_ID: claimed.run.id,
        PLINTH_STEP_EXECUTION_ID: claimed.executionId,
        PLINTH_STACK_ID: stack.id,
      },
    };
    const outcome = claimed.step.type === 'opentofu.plan' ? await planStep(run) : await applyStep(run, claimed.step.type === 'opentofu.destroy');
    return await finishOutcome(run, outcome);
  } finally {
    await credential.revoke().catch(() => undefined);
  }
}

/** Every log line stored before the outcome; a step with lost lines never passes for a success. */
async function finishOutcome(run: StepRun, outcome: StepOutcome): Promise<StepOutcome> {
  await run.ctx.sink.flush();
  const statusDetail = { ...(outcome.statusDetail ?? {}), workerId: run.ctx.workerId, ...logDetail(run.ctx.sink.stats) };
  if (outcome.status === 'SUCCEEDED' && run.ctx.sink.stats.linesLost)
    return { ...outcome, status: 'FAILED', statusDetail, error: logStoreError(run.ctx.sink.stats) };
  return { ...outcome, statusDetail };
}

/** A failed command's outcome, or undefined when it succeeded. */
function commandFailure(what: string, result: TofuProcessResult, limit: StepTimeLimit): StepOutcome | undefined {
  if (result.timedOut) return { status: 'FAILED', error: timedOut(limit) };
  if (result.exitCode === 0 && !result.overflow) return undefined;
  if (result.overflow) return fail('OpenTofu:Output:INVALID', `tofu ${what} printed more than ${MAX_CAPTURE_BYTES} bytes`);
  const how = result.exitCode === null ? `was stopped (${result.signal ?? 'no signal'})` : `exited with code ${result.exitCode}`;
  const error: ErrorBody = engineError('OpenTofu:Command:FAILED', `tofu ${what} ${how}; its output is in the step's log`, {
    command: what,
    exitCode: result.exitCode,
  });
  return { status: 'FAILED', error, statusDetail: { exitCode: result.exitCode, signal: result.signal } };
}

function tofu(run: StepRun, what: string, command: string, extraEnv: Record<string, string> = {}, captureMaxBytes?: number) {
  return runTofuProcess(run.proc, {
    command,
    env: { ...run.env, ...extraEnv },
    workingDirectory: run.workingDirectory,
    binds: run.binds,
    captureMaxBytes,
  }).then((result) => ({
    result,
    failure: commandFailure(what, result, run.timeLimit),
  }));
}

function parseJson(bytes: Buffer | undefined): unknown {
  try {
    return JSON.parse((bytes ?? Buffer.alloc(0)).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** What the database cannot store (NUL, a lone surrogate: the step's own output chose it) is refused like unreadable JSON. */
function storable<T>(value: T | undefined): T | undefined {
  return value !== undefined && treeProblems(value, '').length === 0 ? value : undefined;
}

/** Largest list of override files, or recorded backend configuration, read back from a step. */
const MAX_CHECK_BYTES = 1024 * 1024;

/**
 * initWorkspace runs `init` with the state kept in Plinth whatever the code says (backend-guard.ts): a
 * repository override declaring a backend is refused by name, `init` gets Plinth's addresses on its
 * command line, and the backend it recorded must be Plinth's before anything else runs.
 */
async function initWorkspace(run: StepRun): Promise<StepOutcome | undefined> {
  const found = await tofu(run, 'backend check', FIND_BACKEND_OVERRIDES, {}, MAX_CHECK_BYTES);
  if (found.failure) return found.failure;
  const overrides = overridesDeclaringBackend(found.result.stdout);
  if (overrides.length) {
    const names = overrides.slice(0, 10).join(', ');
    return fail(
      'OpenTofu:Backend:OVERRIDDEN',
      `The code declares a backend or cloud block in an override file (${names}): Plinth keeps every stack's state in its own backend, so the run stops before init. Remove that block from the file.`,
      { files: overrides.slice(0, 10) },
    );
  }
  const init = [WRITE_BACKEND_OVERRIDE, `{ ${WRITE_SENSITIVE_OVERRIDE}\n}`, `"$PLINTH_TOFU" init -input=false -no-color ${INIT_BACKEND_FLAGS}`].join(' && ');
  const initialized = await tofu(run, 'init', init, { PLINTH_SENSITIVE_NAMES: run.sensitive.names.join('\n') });
  if (initialized.failure) return initialized.failure;
  const recorded = await tofu(run, 'backend check', READ_RECORDED_BACKEND, {}, MAX_CHECK_BYTES);
  const address = run.env.TF_HTTP_ADDRESS;
  const problem = recorded.failure
    ? 'init recorded no backend configuration'
    : recordedBackendProblem(recorded.result.stdout, { address, lockAddress: `${address}/lock`, unlockAddress: `${address}/lock` });
  if (problem) return fail('OpenTofu:Backend:NOT_PLINTH', `${problem}: the step stops before OpenTofu uses that backend`);
  return undefined;
}

/**
 * The stack's run queue lets one run at a time use its state, but a cancelled run's OpenTofu may still be
 * finishing its resource and writing state when the next run starts: the next one waits for the lock.
 */
const lockWait = (run: StepRun) => `-lock-timeout=${run.ctx.tofu.lockTimeoutMs}ms`;

const planContext = (runId: string, attemptEpoch: number) => `stack_plans:${runId}:${attemptEpoch}`;

/**
 * planStep: init, plan -out (with the variables in a var file, written and removed by the same process),
 * then show -json for the summary and the plan file itself, both taken out through stdout and never logged.
 * The plan is kept sealed for this run's attempt; a plan with no changes tells the engine nothing needs approval.
 */
async function planStep(run: StepRun): Promise<StepOutcome> {
  const isDestroy = run.claimed.run.action === 'destroy';
  const initFailure = await initWorkspace(run);
  if (initFailure) return initFailure;
  const plan = [
    `umask 077 && printf '%s' "$PLINTH_TFVARS_JSON" > ${VAR_FILE} && unset PLINTH_TFVARS_JSON`,
    `{ "$PLINTH_TOFU" plan -input=false -no-color ${lockWait(run)}${isDestroy ? ' -destroy' : ''} -var-file=${VAR_FILE} -out=${PLAN_FILE}; code=$?; rm -f ${VAR_FILE}; exit $code; }`,
  ].join(' && ');
  const planned = await tofu(run, 'plan', plan, { PLINTH_TFVARS_JSON: JSON.stringify(run.variables) });
  if (planned.failure) return planned.failure;
  const shown = await tofu(run, 'show -json', `"$PLINTH_TOFU" show -json -no-color ${PLAN_FILE}`, {}, MAX_CAPTURE_BYTES);
  if (shown.failure) return shown.failure;
  const summary = storable(summarizePlan(parseJson(shown.result.stdout), secretPieces(run.sensitive.values)));
  if (!summary) return fail('OpenTofu:Output:INVALID', "tofu show -json did not print a plan in OpenTofu's JSON format");
  const file = await tofu(run, 'plan file', `base64 < ${PLAN_FILE}`, {}, MAX_CAPTURE_BYTES);
  if (file.failure) return file.failure;
  const bytes = Buffer.from((file.result.stdout ?? Buffer.alloc(0)).toString('ascii'), 'base64');
  const { claimed } = run;
  await upsertPlan(run.ctx.db, {
    runId: claimed.run.id,
    attemptEpoch: claimed.run.attempt_epoch,
    stackId: run.stack.id,
    stepExecutionId: claimed.executionId,
    isDestroy,
    hasChanges: summary.hasChanges,
    sealedPlan: run.ctx.secrets.seal(bytes, planContext(claimed.run.id, claimed.run.attempt_epoch)),
  });
  if (!summary.hasChanges) await recordLatestRun(run.ctx.db, run.stack.id, claimed.run.id);
  return { status: 'SUCCEEDED', outputData: { ...summary, isDestroy, needsApproval: summary.hasChanges } };
}

/** The saved plan of this run's attempt, opened; an outcome instead when there is none or it is not this run's. */
async function savedPlan(run: StepRun, isDestroy: boolean): Promise<{ bytes: Buffer; hasChanges: boolean } | StepOutcome | undefined> {
  const { claimed } = run;
  const row = await findPlan(run.ctx.db, claimed.run.id, claimed.run.attempt_epoch);
  if (!row) return undefined;
  let bytes: Buffer;
  try {
    if (row.stack_id !== run.stack.id) throw new Error('another stack');
    bytes = run.ctx.secrets.openBytes(row.sealed_plan, planContext(claimed.run.id, claimed.run.attempt_epoch));
  } catch {
    return fail('OpenTofu:Plan:NOT_THIS_RUN', "The saved plan is not this run's or this attempt's: it is refused");
  }
  if (row.is_destroy !== isDestroy) {
    return fail('OpenTofu:Plan:WRONG_KIND', isDestroy ? 'A destroy step cannot apply a change plan' : 'An apply step cannot apply a destroy plan');
  }
  return { bytes, hasChanges: row.has_changes };
}

/** writePlanFile puts the saved plan back into the workspace, a chunk per process (through the environment, never a host path). */
async function writePlanFile(run: StepRun, bytes: Buffer): Promise<StepOutcome | undefined> {
  const start = await tofu(run, 'plan file', `mkdir -p "$HOME/.plinth" && : > ${PLAN_FILE}`);
  if (start.failure) return start.failure;
  for (let at = 0; at < bytes.length; at += PLAN_CHUNK_BYTES) {
    const chunk = bytes.subarray(at, at + PLAN_CHUNK_BYTES).toString('base64');
    const wrote = await tofu(run, 'plan file', `printf '%s' "$PLINTH_PLAN_CHUNK" | base64 -d >> ${PLAN_FILE}`, { PLINTH_PLAN_CHUNK: chunk });
    if (wrote.failure) return wrote.failure;
  }
  return undefined;
}

/**
 * applyStep applies exactly the plan this run's attempt saved (apply, or destroy with a destroy plan),
 * then records the stack's outputs. A destroy step of a run with no plan step destroys directly.
 */
async function applyStep(run: StepRun, isDestroy: boolean): Promise<StepOutcome> {
  const plan = await savedPlan(run, isDestroy);
  if (plan && 'status' in plan) return plan;
  if (!plan && !isDestroy)
    return fail('OpenTofu:Plan:NOT_FOUND', "No plan of this run's attempt to apply: an opentofu.plan step must run before opentofu.apply");
  const { claimed } = run;
  if (plan && !plan.hasChanges) {
    await recordLatestRun(run.ctx.db, run.stack.id, claimed.run.id);
    return { status: 'SUCCEEDED', outputData: { applied: false, reason: 'the plan has no changes' } };
  }
  let applied;
  if (plan) {
    const written = await writePlanFile(run, plan.bytes);
    if (written) return written;
    const initFailure = await initWorkspace(run);
    if (initFailure) return initFailure;
    applied = await tofu(run, 'apply', `"$PLINTH_TOFU" apply -input=false -no-color ${lockWait(run)} ${PLAN_FILE}`);
  } else {
    const initFailure = await initWorkspace(run);
    if (initFailure) return initFailure;
    const destroy = [
      `umask 077 && printf '%s' "$PLINTH_TFVARS_JSON" > ${VAR_FILE} && unset PLINTH_TFVARS_JSON`,
      `{ "$PLINTH_TOFU" destroy -input=false -no-color ${lockWait(run)} -auto-approve -var-file=${VAR_FILE}; code=$?; rm -f ${VAR_FILE}; exit $code; }`,
    ].join(' && ');
    applied = await tofu(run, 'destroy', destroy, { PLINTH_TFVARS_JSON: JSON.stringify(run.variables) });
  }
  if (applied.failure) return applied.failure;
  const out = await tofu(run, 'output -json', `"$PLINTH_TOFU" output -json -no-color`, {}, MAX_CAPTURE_BYTES);
  if (out.failure) return out.failure;
  const output = storable(stackOutputs(parseJson(out.result.stdout), secretPieces(run.sensitive.values)));
  if (!output) return fail('OpenTofu:Output:INVALID', "tofu output -json did not print outputs in OpenTofu's JSON format");
  await recordApply(run.ctx.db, run.stack.id, claimed.run.id, output, !isDestroy);
  return { status: 'SUCCEEDED', outputData: { applied: true, isDestroy, outputs: Object.keys(output) } };
}
