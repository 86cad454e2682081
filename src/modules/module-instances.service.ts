import { sql } from 'kysely';
import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Executor, Trx } from '../platform/db/db.ts';
import { isUniqueViolation } from '../platform/db/db-errors.ts';
import { findUsages } from '../platform/db/dependents.ts';
import { ConflictError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import type { InputProperty } from '../inputs/inputs.schema.ts';
import { replaceReferences as rewriteReferenceValues, type FoundReference } from '../inputs/references.ts';
import { resolveDefaultValue, type Scopes } from '../default-values/resolver.ts';
import { getEnvironmentRow } from '../environments/environments.service.ts';
import { findStackById, lockStackInOrg, updateStack as updateStackRow, type StackRow } from '../stacks/stacks.repo.ts';
import { createStackIn, deleteStackIn, triggerStackRunIn } from '../stacks/stacks.service.ts';
import { carryOver, deployedValueProblems, evaluateInputs, type InputEvaluation } from './instance-inputs.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { deleteSensitiveVariable, findSensitiveVariables, upsertSensitiveVariable } from '../stacks/stack-variables.repo.ts';
import { sensitiveVariableContext } from '../stacks/stack-variables.service.ts';
import {
  deleteInstanceById,
  findConsumersOf,
  findInstance,
  findInstancesByRefs,
  findInstancesPage,
  findOrganizationEdges,
  findReferencesOfConsumers,
  insertInstance,
  lockInstance,
  moduleInstanceRowToApi,
  replaceReferences,
  setDeletingRun,
  updateInstance,
  type ModuleInstanceRow,
} from './module-instances.repo.ts';
import type { CreateModuleInstance, ModuleInstanceListQuery, UpdateModuleInstance, UpgradeModuleInstance } from './module-instances.schema.ts';
import { inputsOf, type ModuleVersionRow } from './module-versions.repo.ts';
import { getModuleVersionRow } from './module-versions.service.ts';
import { findCycle } from './reference-cycles.ts';
import { findWaitingRunsOfStack, hasActiveRunOfStack, isRunFinished } from '../runs/runs.repo.ts';
import { cancelRun } from '../engine/run-commands.ts';
import { referencesWithMessages } from './reference-messages.ts';

const ENTITY = 'ModuleInstance';

/** Writes that change an organization's module graph take this lock, so two of them cannot close a cycle together. */
export async function lockGraph(trx: Trx, organizationId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${`plinth.module-graph:${organizationId}`}))`.execute(trx);
}

interface Placement {
  organizationId: string;
  projectId: string;
  environmentId: string;
}

/** A reference resolved to its producer (undefined: no instance has that id or givenId). */
interface ResolvedReference extends FoundReference {
  producer?: ModuleInstanceRow;
}

function labelOf(inputs: InputProperty[], id: string): string {
  const label = inputs.find((i) => i.id === id)?.label;
  return label ? ` (${label})` : '';
}

/** Resolves each reference's producer and checks what a `reference` input demands of it. */
async function resolveReferences(trx: Trx, place: Placement, inputs: InputProperty[], evaluation: InputEvaluation, selfId: string) {
  const refs = evaluation.references;
  const found = await findInstancesByRefs(trx, place.organizationId, place.environmentId, [...new Set(refs.map((r) => r.target.instance))]);
  const byId = new Map(found.map((i) => [i.id, i]));
  const byGivenId = new Map(found.filter((i) => i.environment_id === place.environmentId).map((i) => [i.given_id, i]));
  const problems: string[] = [];
  const resolved: ResolvedReference[] = refs.map((ref) => {
    const producer = byId.get(ref.target.instance) ?? byGivenId.get(ref.target.instance);
    const at = `/data/values${ref.inputPath}${labelOf(inputs, ref.inputId)}`;
    if (!producer && ref.target.instance !== selfId) {
      problems.push(`${at}: names no module instance "${ref.target.instance}" (an id, or a givenId in this environment)`);
      return ref;
    }
    if (producer?.deleting_run_id) problems.push(`${at}: module instance "${ref.target.instance}" is being deleted`);
    const input = inputs.find((i) => i.id === ref.inputId);
    if (producer && input?.type === 'reference' && ref.inputPath === `/${ref.inputId}`) {
      if (producer.module_type !== input.module) problems.push(`${at}: must name an instance of module type "${input.module}", not "${producer.module_type}"`);
      if (producer.environment_id !== place.environmentId && !input.allow_cross_environment) {
        problems.push(`${at}: must name an instance of the same environment`);
      }
    }
    return { ...ref, producer };
  });
  return { resolved, problems };
}

/** Refuses (422) references that would close a cycle, naming it by the instances' givenIds. */
async function assertAcyclic(trx: Trx, place: Placement, consumer: { id: string; givenId: string }, refs: ResolvedReference[]) {
  const producers = [...new Set(refs.map((r) => (r.producer ? r.producer.id : r.target.instance === consumer.id ? consumer.id : undefined)))].filter(
    (id): id is string => id !== undefined,
  );
  if (producers.length === 0) return;
  const edges = new Map<string, string[]>();
  for (const e of await findOrganizationEdges(trx, place.organizationId)) {
    if (e.consumer_instance_id === consumer.id || !e.producer_instance_id) continue;
    edges.set(e.consumer_instance_id, [...(edges.get(e.consumer_instance_id) ?? []), e.producer_instance_id]);
  }
  const cycle = findCycle(edges, consumer.id, producers);
  if (!cycle) return;
  const names = new Map(refs.filter((r) => r.producer).map((r) => [r.producer!.id, r.producer!.given_id]));
  const missing = cycle.filter((id) => id !== consumer.id && !names.has(id));
  for (const i of await findInstancesByRefs(trx, place.organizationId, place.environmentId, missing)) names.set(i.id, i.given_id);
  names.set(consumer.id, consumer.givenId);
  const named = cycle.map((id) => names.get(id) ?? id);
  throw new RuleViolationError(ENTITY, 'REFERENCE_CYCLE', `These references would close a cycle: ${named.join(' → ')}`, [`cycle: ${named.join(' → ')}`], {
    cycle,
  });
}

/** The stack's variables: the effective values, each reference naming its producer by id (givenIds can be reused). */
function stackVariablesOf(evaluation: InputEvaluation, refs: ResolvedReference[]): Record<string, unknown> {
  const producerOf = new Map(refs.filter((r) => r.producer).map((r) => [r.target.instance, r.producer!.id]));
  return rewriteReferenceValues(evaluation.effective, (target) => ({
    $ref: { instance: producerOf.get(target.instance) ?? target.instance, output: target.output, ...(target.path ? { path: target.path } : {}) },
  })) as Record<string, unknown>;
}

export function stackSourceOf(version: ModuleVersionRow) {
  return { codeSourceId: version.code_source_id, ref: version.commit_sha, path: version.path, onPush: 'none' as const };
}

interface Written {
  id: string;
  givenId: string;
  values: Record<string, unknown>;
  version: ModuleVersionRow;
  applied?: Record<string, unknown>;
  /** Its sensitive inputs that hold a sealed value (the stack's sensitive variables). */
  sealed?: ReadonlySet<string>;
}

/** The names of a stack's sensitive variables: the sensitive inputs of its instance that are set. */
async function sealedOf(db: Executor, stackId: string): Promise<Set<string>> {
  return new Set((await findSensitiveVariables(db, stackId)).map((v) => v.name));
}

/**
 * sealSecrets keeps the values of sensitive inputs as the stack's sensitive variables, sealed: they never
 * reach the instance's values, the stack's variables, a run's data or a response. `null` removes one.
 */
async function sealSecrets(trx: Trx, secrets: SecretBox, stack: { id: string; organizationId: string }, evaluation: InputEvaluation) {
  for (const [name, value] of Object.entries(evaluation.secrets)) {
    const sealedValue = secrets.seal(JSON.stringify(value), sensitiveVariableContext(stack.id, name));
    await upsertSensitiveVariable(trx, { stackId: stack.id, organizationId: stack.organizationId, name, sealedValue });
  }
  for (const name of evaluation.cleared) await deleteSensitiveVariable(trx, stack.id, name);
}

/**
 * evaluateAndCheck evaluates an instance's values against its version, resolves its references and
 * refuses, with every problem at once, what breaks a rule; then refuses a cycle.
 */
async function evaluateAndCheck(trx: Trx, place: Placement, w: Written) {
  const inputs = inputsOf(w.version);
  const scopes: Scopes = place;
  const evaluation = await evaluateInputs({
    inputs,
    values: w.values,
    sealed: w.sealed,
    resolveDefaultValue: (givenId) => resolveDefaultValue(trx, scopes, givenId),
  });
  const { resolved, problems } = await resolveReferences(trx, place, inputs, evaluation, w.id);
  const variables = stackVariablesOf(evaluation, resolved);
  const deployed = w.applied ? deployedValueProblems(inputs, variables, w.applied) : [];
  const all = [...evaluation.problems, ...problems, ...deployed];
  if (all.length > 0) throw new RuleViolationError(ENTITY, 'INVALID_INPUTS', `The values do not fit module version ${w.version.version}`, all);
  await lockGraph(trx, place.organizationId);
  await assertAcyclic(trx, place, { id: w.id, givenId: w.givenId }, resolved);
  return { evaluation, references: resolved, variables };
}

async function saveReferences(trx: Trx, place: Placement, instanceId: string, refs: ResolvedReference[]) {
  await replaceReferences(
    trx,
    instanceId,
    place.organizationId,
    refs.map((r) => ({
      inputId: r.inputId,
      inputPath: r.inputPath,
      producerRef: r.target.instance,
      producerId: r.producer?.id ?? null,
      output: r.target.output,
      outputPath: r.target.path,
    })),
  );
}

function assertUsableVersion(version: ModuleVersionRow) {
  if (version.deprecated_at) {
    throw new RuleViolationError(
      ENTITY,
      'INVALID_INPUTS',
      `Module version ${version.version} is deprecated${version.deprecation_message ? `: ${version.deprecation_message}` : ''}`,
      ['/data/moduleVersionId: is deprecated'],
    );
  }
}

/** createModuleInstance creates the instance and the OpenTofu stack it owns, in one transaction. */
export async function createModuleInstance(db: Db, secrets: SecretBox, principal: Principal, input: CreateModuleInstance) {
  const version = await getModuleVersionRow(db, principal, input.moduleVersionId);
  assertUsableVersion(version);
  const id = newId();
  await db.transaction().execute(async (trx) => {
    const environment = await getEnvironmentRow(trx, principal, input.environmentId, 'keyShare');
    const place = { organizationId: principal.organizationId, projectId: environment.project_id, environmentId: environment.id };
    const { evaluation, references, variables } = await evaluateAndCheck(trx, place, { id, givenId: input.givenId, values: input.values ?? {}, version });
    const stack = await createStackIn(trx, principal, {
      projectId: place.projectId,
      environmentId: place.environmentId,
      name: input.name,
      source: stackSourceOf(version),
      variables,
      moduleInstanceId: id,
    });
    await sealSecrets(trx, secrets, { id: stack.id, organizationId: principal.organizationId }, evaluation);
    try {
      await insertInstance(trx, {
        id,
        ...place,
        definitionId: version.module_definition_id,
        versionId: version.id,
        stackId: stack.id,
        givenId: input.givenId,
        name: input.name,
        values: evaluation.kept,
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new ConflictError(ENTITY, 'ALREADY_EXISTS', `The environment already has a module instance "${input.givenId}"`);
      throw error;
    }
    await saveReferences(trx, place, id, references);
  });
  return getModuleInstance(db, principal, id);
}

async function getInstanceRow(db: Executor, principal: Principal, id: string) {
  const row = await findInstance(db, principal.organizationId, id);
  if (!row) throw new NotFoundError(ENTITY, id);
  return row;
}

/** getModuleInstance reads one instance with its resolved inputs and its references' problems. */
export async function getModuleInstance(db: Db, principal: Principal, id: string) {
  const row = await getInstanceRow(db, principal, id);
  const version = await getModuleVersionRow(db, principal, row.module_version_id);
  const evaluation = await evaluateInputs({
    inputs: inputsOf(version),
    values: row.values,
    sealed: await sealedOf(db, row.stack_id),
    resolveDefaultValue: (givenId) => resolveDefaultValue(db, placementOf(row), givenId),
  });
  return { ...moduleInstanceRowToApi(row), inputs: evaluation.resolved, references: await referencesWithMessages(db, [row.id]) };
}

function placementOf(row: ModuleInstanceRow): Placement {
  return { organizationId: row.organization_id, projectId: row.project_id, environmentId: row.environment_id };
}

export async function listModuleInstances(db: Db, principal: Principal, query: ModuleInstanceListQuery, page: PageRequest) {
  const rows = await findInstancesPage(db, principal.organizationId, query, page);
  const { items, meta } = toPage(rows, page, (r) => r.id);
  return { items: items.map(moduleInstanceRowToApi), meta };
}

async function referencesChanged(trx: Trx, instanceId: string, refs: ResolvedReference[]): Promise<boolean> {
  const key = (inputPath: string, producer: string | null | undefined, output: string, path: string) => `${inputPath}\n${producer ?? ''}\n${output}\n${path}`;
  const before = (await findReferencesOfConsumers(trx, [instanceId])).map((r) => key(r.input_path, r.producer_instance_id, r.output, r.output_path)).sort();
  const after = refs.map((r) => key(r.inputPath, r.producer?.id, r.target.output, r.target.path)).sort();
  return before.join('\0') !== after.join('\0');
}

/**
 * A deploy waiting for its producers waits for those its references named when it was triggered. When
 * they change, it is cancelled: it would wait on the wrong instances (and, were the graph now reversed,
 * on a run that waits for it).
 */
async function cancelWaitingDeploys(trx: Trx, stackId: string, actor: string): Promise<void> {
  for (const run of await findWaitingRunsOfStack(trx, stackId)) await cancelRun(trx, run.id, actor);
}

/**
 * lockForWrite takes what a change of an existing instance holds, in the one order every module write
 * takes it: the organization's graph lock, then (for a deploy) its producers' stacks, then the
 * instance's stack, then the instance. A run finishing holds the stack and then writes the instance,
 * so the stack comes first here too. `live`: refuse an instance being deleted (409).
 */
export async function lockForWrite(
  trx: Trx,
  principal: Principal,
  id: string,
  options: { live: boolean; beforeStack?: (seen: ModuleInstanceRow) => Promise<void> },
): Promise<ModuleInstanceRow> {
  const seen = await findInstance(trx, principal.organizationId, id);
  if (!seen) throw new NotFoundError(ENTITY, id);
  await lockGraph(trx, principal.organizationId);
  await options.beforeStack?.(seen);
  await lockStackInOrg(trx, principal.organizationId, seen.stack_id);
  const row = await lockInstance(trx, principal.organizationId, id);
  if (!row) throw new NotFoundError(ENTITY, id);
  if (options.live && row.deleting_run_id) {
    throw new ConflictError(ENTITY, 'DELETING', `Module instance ${id} is being deleted (run ${row.deleting_run_id})`, {
      metadata: { runId: row.deleting_run_id },
    });
  }
  return row;
}

/**
 * rewrite stores new values (and version) of a locked instance, checked against what it deployed, and
 * keeps its stack in step. Returns the stack's variables: what a deploy of it now deploys.
 */
export async function rewrite(
  trx: Trx,
  secrets: SecretBox,
  actor: string,
  row: ModuleInstanceRow,
  version: ModuleVersionRow,
  values: Record<string, unknown>,
  name?: string,
) {
  const place = placementOf(row);
  const { evaluation, references, variables } = await evaluateAndCheck(trx, place, {
    id: row.id,
    givenId: row.given_id,
    values,
    version,
    applied: row.applied_values ?? undefined,
    sealed: await sealedOf(trx, row.stack_id),
  });
  await updateInstance(trx, row.id, { name, values: evaluation.kept, versionId: version.id });
  if (await referencesChanged(trx, row.id, references)) await cancelWaitingDeploys(trx, row.stack_id, actor);
  await saveReferences(trx, place, row.id, references);
  await updateStackRow(trx, row.stack_id, { name, source: stackSourceOf(version), variables });
  await sealSecrets(trx, secrets, { id: row.stack_id, organizationId: row.organization_id }, evaluation);
  return variables;
}

/** updateModuleInstance renames the instance and replaces its values (the whole set). */
export async function updateModuleInstance(db: Db, secrets: SecretBox, principal: Principal, id: string, input: UpdateModuleInstance) {
  await db.transaction().execute(async (trx) => {
    const row = await lockForWrite(trx, principal, id, { live: true });
    if (input.values === undefined && input.name === undefined) return;
    const version = await getModuleVersionRow(trx, principal, row.module_version_id);
    await rewrite(trx, secrets, principal.userId, row, version, input.values ?? row.values, input.name);
  });
  return getModuleInstance(db, principal, id);
}

/**
 * upgradeModuleInstance moves the instance to another version of its definition. Without new values its
 * current ones carry over, through `moved_from` where the new version renamed or merged inputs; the
 * deployed-value rules then compare with what was deployed under the old names.
 */
export async function upgradeModuleInstance(db: Db, secrets: SecretBox, principal: Principal, id: string, input: UpgradeModuleInstance) {
  const target = await getModuleVersionRow(db, principal, input.moduleVersionId);
  assertUsableVersion(target);
  await db.transaction().execute(async (trx) => {
    const row = await lockForWrite(trx, principal, id, { live: true });
    if (target.module_definition_id !== row.module_definition_id) {
      throw new RuleViolationError('ModuleVersion', 'OTHER_DEFINITION', `Module version ${target.id} is not a version of the instance's definition`, [
        '/data/moduleVersionId: is a version of another module definition',
      ]);
    }
    const carried = carryOver(row.values, inputsOf(target));
    await rewrite(trx, secrets, principal.userId, row, target, { ...carried, ...(input.values ?? {}) });
  });
  return getModuleInstance(db, principal, id);
}

/**
 * deleteModuleInstance deletes an instance whose stack holds no resources at once (`deleted`), else
 * starts its stack's destroy run and answers the instance marked as deleting: the instance and its
 * stack go when that run succeeds. Refused while other instances consume its outputs.
 */
export async function deleteModuleInstance(db: Db, principal: Principal, id: string): Promise<{ deleted: true } | { deleted: false; runId: string }> {
  const outcome = await db.transaction().execute(async (trx) => {
    const row = await lockForWrite(trx, principal, id, { live: false });
    // A destroy run that ended without finishing the delete (cancelled while it waited) is replaced.
    if (row.deleting_run_id && !(await isRunFinished(trx, row.deleting_run_id))) return { deleted: false as const, runId: row.deleting_run_id };
    if (await hasActiveRunOfStack(trx, row.stack_id)) {
      throw new ConflictError(ENTITY, 'BUSY', `A run of module instance ${row.given_id}'s stack is not finished: cancel it or wait for it first`);
    }
    const consumers = await findConsumersOf(trx, row.id, 10);
    if (consumers.length > 0) {
      throw new ConflictError(ENTITY, 'IN_USE', `Module instance ${row.given_id} has consumers: change their references first`, {
        details: [
          { title: 'In use by', render: 'list', items: [`module instances: ${consumers.slice(0, 10).join(', ')}${consumers.length > 10 ? ', and more' : ''}`] },
        ],
      });
    }
    const stack = await findStackById(trx, row.organization_id, row.stack_id);
    if (stack && (await findUsages(trx, 'Stack', stack.id)).length === 0 && !stack.active_run_id) {
      await deleteInstanceById(trx, row.id);
      await deleteStackIn(trx, stack);
      return { deleted: true as const };
    }
    const run = await triggerStackRunIn(trx, principal, row.stack_id, {
      action: 'destroy',
      autoapprove: true,
      description: `Delete module instance ${row.given_id}`,
    });
    await setDeletingRun(trx, row.id, run.id);
    return { deleted: false as const, runId: run.id };
  });
  return outcome;
}

/**
 * finishDeletion completes the delete of the instance owning a stack whose destroy run just ended: when
 * it succeeded, the instance, its references and its stack go. Called in the transaction that finished
 * the run; the instance is read, not locked: whoever holds its lock while its delete runs (a refused
 * change) never waits for the stack's lock, which that transaction holds.
 */
export async function finishDeletion(trx: Trx, stack: StackRow, row: ModuleInstanceRow, runId: string, succeeded: boolean): Promise<void> {
  if (row.deleting_run_id !== runId) return;
  // Never throws: it runs in the transaction that finishes the destroy run. When the stack cannot go
  // (another run of it was queued since, or its state still holds resources), the instance stays.
  const stays = !succeeded || (await hasActiveRunOfStack(trx, stack.id)) || (await findUsages(trx, 'Stack', stack.id)).length > 0;
  if (stays) return setDeletingRun(trx, row.id, null);
  await deleteInstanceById(trx, row.id);
  await deleteStackIn(trx, { ...stack, active_run_id: null });
}
