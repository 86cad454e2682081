// Deploying module instances (docs/modules.md#deploying): a deploy is a run of the instance's stack whose
// `data` records what it deploys; it waits for the deploys of the instances it consumes, and an
// environment's deploy starts the changed instances' runs in the order of its module graph.

import { Type, type Static } from '@sinclair/typebox';
import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Trx } from '../platform/db/db.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { Body, Description, StringEnum } from '../platform/schema.ts';
import { onStackRunFinished } from '../engine/stack-run-hooks.ts';
import { getEnvironmentRow } from '../environments/environments.service.ts';
import { getRun } from '../runs/runs.service.ts';
import { triggerStackRunIn } from '../stacks/stacks.service.ts';
import { findInstance, findInstancesOfEnvironment, findReferencesOfConsumers, recordInstanceApplied, type ModuleInstanceRow } from './module-instances.repo.ts';
import { finishDeletion, lockForWrite, lockGraph, rewrite } from './module-instances.service.ts';
import { findVersionById } from './module-versions.repo.ts';
import { canonicalJson } from './instance-inputs.ts';
import { moduleDeployStarted } from './module-deploy-hooks.ts';
import { findProducerOutputs, messagesOf } from './reference-messages.ts';

export const DEPLOY_ACTIONS = ['apply', 'plan'] as const;

export const DeployRequest = Body(
  Type.Object(
    {
      action: Type.Optional(StringEnum(DEPLOY_ACTIONS, { default: 'apply', description: 'apply: plan, approve, apply; plan: the plan alone' })),
      autoapprove: Type.Optional(Type.Boolean({ description: 'Apply without waiting at the approval step' })),
      description: Type.Optional(Description),
    },
    { additionalProperties: false },
  ),
);
export type DeployRequest = Static<typeof DeployRequest>['data'];

/** The stacks of the instances an instance consumes, share-locked in id order before its own stack is locked. */
export async function lockProducerStacks(trx: Trx, instanceId: string): Promise<string[]> {
  const refs = await findReferencesOfConsumers(trx, [instanceId]);
  const producers = [...new Set(refs.flatMap((r) => (r.producer_instance_id && r.producer_instance_id !== instanceId ? [r.producer_instance_id] : [])))];
  const outputs = await findProducerOutputs(trx, producers);
  // A producer that has not applied an output yet may be deploying: the run waits for it, then reads it.
  const problems = refs
    .flatMap((r) => messagesOf(r, outputs))
    .filter((m) => m.kind !== 'OUTPUT_NOT_APPLIED')
    .map((m) => `/values${m.refInputPath}: ${m.message}`);
  if (problems.length > 0) throw new RuleViolationError('ModuleInstance', 'BROKEN_REFERENCES', 'The instance references outputs that cannot exist', problems);
  if (producers.length === 0) return [];
  const rows = await trx
    .selectFrom('stacks')
    .innerJoin('module_instances as i', 'i.stack_id', 'stacks.id')
    .select('stacks.id')
    .where('i.id', 'in', producers)
    .orderBy('stacks.id')
    .forShare('stacks')
    .execute();
  return rows.map((r) => r.id);
}

/**
 * deployIn starts the deploy of an instance: its current values, against its current version. With
 * `onlyChanged`, an instance whose last apply deployed exactly that is left alone (undefined).
 */
async function deployIn(
  trx: Trx,
  secrets: SecretBox,
  principal: Principal,
  id: string,
  input: DeployRequest,
  triggerSource: 'API' | 'ENVIRONMENT_DEPLOY',
  onlyChanged = false,
): Promise<string | undefined> {
  let waitForStackIds: string[] = [];
  const row = await lockForWrite(trx, principal, id, {
    live: !onlyChanged,
    beforeStack: async (seen) => {
      waitForStackIds = await lockProducerStacks(trx, seen.id);
    },
  });
  if (row.deleting_run_id) return undefined;
  const version = await findVersionById(trx, row.module_version_id);
  if (!version) throw new NotFoundError('ModuleVersion', row.module_version_id);
  // Evaluated again: a default value may have changed since the values were written.
  const variables = await rewrite(trx, secrets, principal.userId, row, version, row.values);
  const unchanged =
    row.applied_values !== null &&
    row.applied_version_id === version.id &&
    canonicalJson(row.applied_values) === canonicalJson(variables) &&
    !(await sealedChangedSince(trx, row.stack_id, row.applied_at));
  if (onlyChanged && unchanged) return undefined;
  const data = {
    kind: 'stack',
    module_input: variables,
    module_version_id: version.id,
    ...(row.applied_values ? { previous_module_input: row.applied_values } : {}),
    ...(row.applied_version_id ? { previous_module_version_id: row.applied_version_id } : {}),
  };
  const action = input.action ?? 'apply';
  const description = input.description ?? `Deploy module instance ${row.given_id} at version ${version.version}`;
  const run = await triggerStackRunIn(trx, principal, row.stack_id, { action, autoapprove: input.autoapprove ?? false, description, data, waitForStackIds });
  // A plan deploys nothing: only an apply is a deployment of the instance.
  if (action === 'apply') {
    await moduleDeployStarted(trx, {
      organizationId: row.organization_id,
      projectId: row.project_id,
      environmentId: row.environment_id,
      moduleInstanceId: row.id,
      description,
      triggerSource,
      pipelineRunId: run.id,
      data,
    });
  }
  return run.id;
}

/** deployModuleInstance starts a run deploying the instance; it waits while an instance it consumes deploys. */
export async function deployModuleInstance(db: Db, secrets: SecretBox, principal: Principal, id: string, input: DeployRequest) {
  const runId = await db.transaction().execute(async (trx) => deployIn(trx, secrets, principal, id, input, 'API'));
  return getRun(db, principal, runId!);
}

/** The instances in the order of the graph: producers before their consumers (references elsewhere do not order). */
function graphOrder(instances: ModuleInstanceRow[], edges: { consumer: string; producer: string }[]): ModuleInstanceRow[] {
  const byId = new Map(instances.map((i) => [i.id, i]));
  const waitingOn = new Map(instances.map((i) => [i.id, 0]));
  const consumersOf = new Map<string, string[]>();
  for (const e of edges) {
    if (!byId.has(e.producer) || e.producer === e.consumer) continue;
    waitingOn.set(e.consumer, waitingOn.get(e.consumer)! + 1);
    consumersOf.set(e.producer, [...(consumersOf.get(e.producer) ?? []), e.consumer]);
  }
  const ready = instances.filter((i) => waitingOn.get(i.id) === 0).map((i) => i.id);
  const order: ModuleInstanceRow[] = [];
  for (let head = 0; head < ready.length; head++) {
    order.push(byId.get(ready[head])!);
    for (const c of consumersOf.get(ready[head]) ?? []) {
      waitingOn.set(c, waitingOn.get(c)! - 1);
      if (waitingOn.get(c) === 0) ready.push(c);
    }
  }
  return order;
}

/**
 * deployEnvironment deploys, in one transaction, every instance of the environment whose version or
 * values differ from what it last applied, producers first: each consumer's run waits for its
 * producers' runs, so independent branches run side by side.
 */
export async function deployEnvironment(db: Db, secrets: SecretBox, principal: Principal, environmentId: string, input: DeployRequest) {
  const started = await db.transaction().execute(async (trx) => {
    const environment = await getEnvironmentRow(trx, principal, environmentId);
    // Before any instance row: every module write takes the graph lock first.
    await lockGraph(trx, principal.organizationId);
    const instances = await findInstancesOfEnvironment(trx, environment.id);
    const refs = await findReferencesOfConsumers(
      trx,
      instances.map((i) => i.id),
    );
    const edges = refs.flatMap((r) => (r.producer_instance_id ? [{ consumer: r.consumer_instance_id, producer: r.producer_instance_id }] : []));
    const runs: { moduleInstanceId: string; givenId: string; runId: string }[] = [];
    const unchanged: { moduleInstanceId: string; givenId: string }[] = [];
    for (const listed of graphOrder(instances, edges)) {
      if (listed.deleting_run_id) continue;
      const runId = await deployIn(trx, secrets, principal, listed.id, input, 'ENVIRONMENT_DEPLOY', true);
      if (runId) runs.push({ moduleInstanceId: listed.id, givenId: listed.given_id, runId });
      else unchanged.push({ moduleInstanceId: listed.id, givenId: listed.given_id });
    }
    return { runs, unchanged };
  });
  const runs = [];
  for (const r of started.runs) runs.push({ moduleInstanceId: r.moduleInstanceId, givenId: r.givenId, run: await getRun(db, principal, r.runId) });
  return { runs, unchanged: started.unchanged };
}

/** Whether a sensitive input of the instance was set since its last deploy (sealed values are not in its variables). */
async function sealedChangedSince(trx: Trx, stackId: string, appliedAt: Date | null): Promise<boolean> {
  if (!appliedAt) return true;
  const row = await trx
    .selectFrom('stack_sensitive_variables')
    .select('name')
    .where('stack_id', '=', stackId)
    .where('updated_at', '>', appliedAt)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * When a run of an instance's stack ends (in the transaction that ends it): a deploy's successful apply
 * records what it deployed, which the rules on deployed values compare with; a delete's destroy run
 * completes the delete. One read of the stack tells every other stack's run apart at once.
 */
onStackRunFinished(async (trx, finished) => {
  const stack = await trx.selectFrom('stacks').selectAll().where('id', '=', finished.stackId).executeTakeFirst();
  if (!stack?.module_instance_id) return;
  const row = await findInstance(trx, stack.organization_id, stack.module_instance_id);
  if (!row) return;
  if (row.deleting_run_id) return finishDeletion(trx, stack, row, finished.runId, finished.succeeded);
  if (!finished.succeeded) return;
  const run = await trx.selectFrom('pipeline_runs').select(['action', 'data']).where('id', '=', finished.runId).executeTakeFirst();
  const data = run?.data as { module_input?: Record<string, unknown>; module_version_id?: string } | null | undefined;
  if (run?.action !== 'apply' || !data?.module_input || !data.module_version_id) return;
  await recordInstanceApplied(trx, finished.stackId, data.module_version_id, data.module_input as never);
});
