import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Executor, Trx } from '../platform/db/db.ts';
import { isUniqueViolation } from '../platform/db/db-errors.ts';
import { findUsages, inUseError } from '../platform/db/dependents.ts';
import { ConflictError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { getEnvironmentRow } from '../environments/environments.service.ts';
import { parsePipelineConfig } from '../pipelines/pipeline-config.validate.ts';
import { deletePipelinesByIds, findLatestPipelineVersion, insertPipelineWithFirstVersion } from '../pipelines/pipelines.repo.ts';
import { getProjectRow } from '../projects/projects.service.ts';
import { assertCodeSourceUsable } from '../code-sources/code-sources.service.ts';
import { triggerRun, type TriggeredRun } from '../engine/run-commands.ts';
import { hasActiveRunOfStack } from '../runs/runs.repo.ts';
import { runRowToRun } from '../runs/runs.map.ts';
import { DEFAULT_CHANGE_PIPELINE, DEFAULT_DESTROY_PIPELINE } from './default-pipelines.ts';
import { changedSource } from './source-change.ts';
import {
  deleteStackById,
  findStackById,
  findStacksPage,
  insertStack,
  lockStackInOrg,
  lockStacksOfCodeSource,
  stackRowToStack,
  type StackRow,
  updateStack as updateStackRow,
} from './stacks.repo.ts';
import type { CreateStack, StackListQuery, TriggerStackRun, UpdateStack } from './stacks.schema.ts';

async function getStackRow(db: Executor, principal: Principal, id: string) {
  const row = await findStackById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('Stack', id);
  return row;
}

/** The project and environment must be the organization's (else 404), and the environment in the project (else 422). */
async function assertPlacement(db: Executor, principal: Principal, projectId: string, environmentId: string) {
  await getProjectRow(db, principal, projectId);
  const environment = await getEnvironmentRow(db, principal, environmentId);
  if (environment.project_id !== projectId) {
    throw new RuleViolationError('Stack', 'ENVIRONMENT_NOT_IN_PROJECT', `Environment ${environmentId} belongs to another project`, [], {
      environmentId,
      projectId,
    });
  }
}

/** createStack creates the stack with its change and destroy pipelines, all in one transaction. */
export async function createStack(db: Db, principal: Principal, input: CreateStack) {
  return db.transaction().execute(async (trx) => stackRowToStack(await createStackIn(trx, principal, input)));
}

/**
 * createStackIn creates a stack and its two pipelines in the caller's transaction: for a module
 * instance, `moduleInstanceId` marks the stack as the instance's, changed only through it.
 */
export async function createStackIn(trx: Trx, principal: Principal, input: CreateStack & { moduleInstanceId?: string }) {
  const changeConfig = input.pipelines?.change ? parsePipelineConfig(input.pipelines.change) : DEFAULT_CHANGE_PIPELINE;
  const destroyConfig = input.pipelines?.destroy ? parsePipelineConfig(input.pipelines.destroy) : DEFAULT_DESTROY_PIPELINE;
  await assertPlacement(trx, principal, input.projectId, input.environmentId);
  if (input.source?.codeSourceId && !input.moduleInstanceId) await assertCodeSourceUsable(trx, principal, input.source.codeSourceId);
  const pipeline = (kind: string, config: typeof changeConfig) =>
    insertPipelineWithFirstVersion(trx, {
      organizationId: principal.organizationId,
      projectId: input.projectId,
      name: `${input.name} (${kind})`,
      config,
      createdById: principal.userId,
    });
  const change = await pipeline('change', changeConfig);
  const destroy = await pipeline('destroy', destroyConfig);
  const id = newId();
  try {
    await insertStack(trx, {
      id,
      organizationId: principal.organizationId,
      projectId: input.projectId,
      environmentId: input.environmentId,
      givenId: input.givenId ?? null,
      name: input.name,
      source: input.source ?? null,
      variables: input.variables ?? {},
      changePipelineId: change.pipelineId,
      destroyPipelineId: destroy.pipelineId,
      moduleInstanceId: input.moduleInstanceId ?? null,
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError('Stack', 'ALREADY_EXISTS', `A stack with givenId "${input.givenId}" already exists`);
    throw error;
  }
  return (await findStackById(trx, principal.organizationId, id))!;
}

/** A module instance's stack changes only through its instance (docs/modules.md). */
function assertNotManaged(stack: StackRow) {
  if (stack.module_instance_id) {
    throw new ConflictError(
      'Stack',
      'MANAGED_BY_MODULE_INSTANCE',
      `Stack ${stack.id} belongs to module instance ${stack.module_instance_id}: change the instance instead`,
      {
        metadata: { moduleInstanceId: stack.module_instance_id },
      },
    );
  }
}

export async function getStack(db: Db, principal: Principal, id: string) {
  return stackRowToStack(await getStackRow(db, principal, id));
}

export async function listStacks(db: Db, principal: Principal, query: StackListQuery, page: PageRequest) {
  const rows = await findStacksPage(db, principal.organizationId, query, page);
  const { items, meta } = toPage(rows, page, (r) => r.id);
  return { items: items.map(stackRowToStack), meta };
}

export async function updateStack(db: Db, principal: Principal, id: string, input: UpdateStack) {
  return db.transaction().execute(async (trx) => {
    const stack = await lockStackInOrg(trx, principal.organizationId, id);
    if (!stack) throw new NotFoundError('Stack', id);
    assertNotManaged(stack);
    if (input.source?.codeSourceId) await assertCodeSourceUsable(trx, principal, input.source.codeSourceId);
    const source = input.source === undefined ? undefined : changedSource(stackRowToStack(stack).source, input.source);
    await updateStackRow(trx, id, { ...input, source });
    return stackRowToStack((await findStackById(trx, principal.organizationId, id))!);
  });
}

/**
 * deleteStack removes the stack, its runs, its state versions and its two pipelines; refused (409) while a
 * run is not finished, or while its OpenTofu state still holds resources (destroy them first).
 */
export async function deleteStack(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx: Trx) => {
    // The stack's row lock also blocks a run being triggered meanwhile (triggers take it too).
    const stack = await lockStackInOrg(trx, principal.organizationId, id);
    if (!stack) throw new NotFoundError('Stack', id);
    assertNotManaged(stack);
    await deleteStackIn(trx, stack);
  });
}

/** deleteStackIn deletes a locked stack with its pipelines, unless a run of it is unfinished or something uses it (409). */
export async function deleteStackIn(trx: Trx, stack: StackRow) {
  const id = stack.id;
  if (await hasActiveRunOfStack(trx, id)) {
    throw new ConflictError('Stack', 'BUSY', `Stack ${id} has a run that is not finished; cancel it first`, {
      metadata: { activeRunId: stack.active_run_id },
    });
  }
  const usages = await findUsages(trx, 'Stack', id);
  if (usages.length > 0) throw inUseError('Stack', `Stack ${id}`, usages);
  await deleteStackById(trx, id);
  await deletePipelinesByIds(trx, [stack.change_pipeline_id, stack.destroy_pipeline_id]);
}

/**
 * triggerStackRun queues a run of the stack's change pipeline (`plan`, `apply`) or destroy pipeline
 * (`destroy`) at the pipeline's latest version. It starts at once when the stack is free, otherwise
 * it waits behind the stack's earlier runs.
 */
export async function triggerStackRun(db: Db, principal: Principal, stackId: string, input: TriggerStackRun) {
  return db.transaction().execute(async (trx) => {
    const stack = await findStackById(trx, principal.organizationId, stackId);
    // A module instance's stack deploys through the instance, which records what each run deploys.
    if (stack) assertNotManaged(stack);
    return triggerStackRunIn(trx, principal, stackId, input);
  });
}

/**
 * triggerStackRunIn is triggerStackRun in the caller's transaction, with what a module deploy adds to
 * the run: its `data`, and the stacks (its producers') that must be idle before it takes its own.
 */
export async function triggerStackRunIn(
  trx: Trx,
  principal: Principal,
  stackId: string,
  input: TriggerStackRun & { data?: Record<string, unknown>; waitForStackIds?: string[] },
) {
  const action = input.action ?? 'apply';
  const stack = await lockStackInOrg(trx, principal.organizationId, stackId);
  if (!stack) throw new NotFoundError('Stack', stackId);
  const pipelineId = action === 'destroy' ? stack.destroy_pipeline_id : stack.change_pipeline_id;
  // Read once the stack's lock is held: a change of the stack that committed while this waited
  // (a new pipeline version) is what the run runs.
  const version = await findLatestPipelineVersion(trx, pipelineId);
  if (!version) throw new NotFoundError('Pipeline', pipelineId);
  const triggered = await triggerRun(trx, {
    organizationId: principal.organizationId,
    stackId,
    action,
    autoapprove: input.autoapprove ?? false,
    description: input.description ?? '',
    input: input.inputs ?? null,
    createdById: principal.userId,
    pipelineId,
    pipelineVersionId: version.id,
    ...(input.data ? { data: input.data } : {}),
    ...(input.waitForStackIds?.length ? { waitForStackIds: input.waitForStackIds } : {}),
  });
  // As this transaction leaves it: the response shows the run as triggered, before any worker saw it.
  return triggeredRunToRun(triggered, stack.project_id, stack.environment_id);
}

function triggeredRunToRun(run: TriggeredRun, projectId: string, environmentId: string) {
  return runRowToRun({ ...run.row, stack_active_run_id: run.stackActiveRunId, stack_project_id: projectId, stack_environment_id: environmentId });
}

/** A push to a branch of a code source, as the webhook verified and read it. */
export interface PushTrigger {
  organizationId: string;
  codeSourceId: string;
  branch: string;
  commitSha: string;
  author: string;
  message: string;
  deliveryId: string;
  provider: string;
  /** Whether the push changed anything under a stack's path. */
  touches: (stackPath: string | undefined) => boolean;
}

/**
 * triggerStackRunsForPush queues, through the stacks' normal queue, a run at the pushed commit of every
 * stack that tracks the pushed branch of the code source (its `ref`) and whose path the push touched:
 * `apply` unless the stack's `onPush` says `plan` (or `none`). Returns the runs' ids.
 */
export async function triggerStackRunsForPush(trx: Trx, push: PushTrigger): Promise<string[]> {
  const runIds: string[] = [];
  for (const stack of await lockStacksOfCodeSource(trx, push.organizationId, push.codeSourceId)) {
    const source = stack.source ? stackRowToStack(stack).source : undefined;
    const tracked = source?.ref === push.branch || source?.ref === `refs/heads/${push.branch}`;
    const action = source?.onPush ?? 'apply';
    if (!tracked || action === 'none' || !push.touches(source?.path)) continue;
    const version = await findLatestPipelineVersion(trx, stack.change_pipeline_id);
    if (!version) continue;
    const run = await triggerRun(trx, {
      organizationId: push.organizationId,
      pipelineId: stack.change_pipeline_id,
      pipelineVersionId: version.id,
      stackId: stack.id,
      action,
      autoapprove: false,
      description: `Push of ${push.commitSha.slice(0, 12)} to ${push.branch} by ${push.author}${push.message ? `: ${push.message}` : ''}`.slice(0, 4096),
      input: null,
      createdById: null,
      commitSha: push.commitSha,
      triggerMetadata: { webhook_event: `${push.provider.toLowerCase()}:push`, trigger_given_id: push.deliveryId },
    });
    runIds.push(run.id);
  }
  return runIds;
}
