import type { Principal } from '../platform/auth/principal.ts';
import { isEmptyPatch, isForeignKeyViolation, isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { findUsages, inUseError } from '../platform/db/dependents.ts';
import { BadRequestError, ConflictError, NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { findCloudAccountById } from '../cloud-accounts/cloud-accounts.repo.ts';
import { allowEntryProblem } from '../platform/outbound/address-policy.ts';
import {
  deleteExecutionEnvironmentById,
  executionEnvironmentRowToExecutionEnvironment,
  findExecutionEnvironmentById,
  findExecutionEnvironmentsPage,
  insertExecutionEnvironment,
  updateExecutionEnvironment as updateExecutionEnvironmentRow,
  type NetworkColumns,
} from './execution-environments.repo.ts';
import {
  CLOUD_FIELDS,
  type CreateExecutionEnvironment,
  type ExecutionEnvironmentListQuery,
  type UpdateExecutionEnvironment,
} from './execution-environments.schema.ts';

type Network = Partial<Record<(typeof CLOUD_FIELDS)[number], string>>;

/** CLOUD needs the whole network, LOCAL none of it: a shape rule of the body, hence 400 like any schema failure. */
function assertNetworkFits(type: string, network: Network, requireAll: boolean) {
  const problems =
    type === 'CLOUD'
      ? requireAll
        ? CLOUD_FIELDS.filter((f) => network[f] === undefined).map((f) => `/data/${f}: is required when type is CLOUD`)
        : []
      : CLOUD_FIELDS.filter((f) => network[f] !== undefined).map((f) => `/data/${f}: must be absent when type is LOCAL`);
  if (problems.length > 0) throw new BadRequestError('The request does not match its schema', problems);
}

/** Each entry must read as PLINTH_STEP_EGRESS_ALLOW's do: a bad one is a 400 naming it. */
function assertEgressAllow(entries: readonly string[] | null | undefined) {
  const problems = (entries ?? []).flatMap((entry, i) => (allowEntryProblem(entry) ? [`/data/egressAllow/${i}: ${allowEntryProblem(entry)}`] : []));
  if (problems.length > 0) throw new BadRequestError('The request does not match its schema', problems);
}

function cloudAccountMissing(id: string) {
  return new NotFoundError('CloudAccount', id);
}

/** A referenced cloud account must be one of the caller's organization; another organization's is "missing" too. */
async function assertCloudAccount(db: Executor, principal: Principal, id: string | undefined) {
  if (id !== undefined && !(await findCloudAccountById(db, principal.organizationId, id))) throw cloudAccountMissing(id);
}

function networkColumns(n: Network): NetworkColumns {
  return { cloud_account_id: n.cloudAccountId, region: n.region, vpc_id: n.vpcId, subnet_id: n.subnetId, security_group_id: n.securityGroupId };
}

export async function getExecutionEnvironmentRow(db: Executor, principal: Principal, id: string) {
  const row = await findExecutionEnvironmentById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('ExecutionEnvironment', id);
  return row;
}

export async function createExecutionEnvironment(db: Db, principal: Principal, input: CreateExecutionEnvironment) {
  assertNetworkFits(input.type, input, true);
  assertEgressAllow(input.egressAllow);
  await assertCloudAccount(db, principal, input.cloudAccountId);
  const insert = insertExecutionEnvironment(db, {
    id: newId(),
    organizationId: principal.organizationId,
    givenId: input.givenId,
    name: input.name,
    type: input.type,
    egressAllow: input.egressAllow ?? null,
    ...networkColumns(input),
  });
  const row = await rethrowAs(
    rethrowAs(insert, isForeignKeyViolation, () => cloudAccountMissing(input.cloudAccountId ?? '')),
    isUniqueViolation,
    () => new ConflictError('ExecutionEnvironment', 'ALREADY_EXISTS', `An execution environment with givenId ${input.givenId} already exists`),
  );
  return executionEnvironmentRowToExecutionEnvironment(row);
}

export async function getExecutionEnvironment(db: Db, principal: Principal, id: string) {
  return executionEnvironmentRowToExecutionEnvironment(await getExecutionEnvironmentRow(db, principal, id));
}

export async function listExecutionEnvironments(db: Db, principal: Principal, page: PageRequest, query: ExecutionEnvironmentListQuery) {
  const rows = await findExecutionEnvironmentsPage(db, principal.organizationId, page, query.type);
  const { items, meta } = toPage(rows, page, (r) => r.id);
  return { items: items.map(executionEnvironmentRowToExecutionEnvironment), meta };
}

export async function updateExecutionEnvironment(db: Db, principal: Principal, id: string, changes: UpdateExecutionEnvironment) {
  const current = await getExecutionEnvironmentRow(db, principal, id);
  if (isEmptyPatch(changes)) return executionEnvironmentRowToExecutionEnvironment(current);
  assertNetworkFits(current.type, changes, false);
  assertEgressAllow(changes.egressAllow);
  await assertCloudAccount(db, principal, changes.cloudAccountId);
  const update = updateExecutionEnvironmentRow(db, id, { name: changes.name, egress_allow: changes.egressAllow, ...networkColumns(changes) });
  const row = await rethrowAs(update, isForeignKeyViolation, () => cloudAccountMissing(changes.cloudAccountId ?? ''));
  return executionEnvironmentRowToExecutionEnvironment(row);
}

/** deleteExecutionEnvironment refuses while environments run there; the row lock orders it against their writes. */
export async function deleteExecutionEnvironment(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await findExecutionEnvironmentById(trx, principal.organizationId, id, true);
    if (!row) throw new NotFoundError('ExecutionEnvironment', id);
    const usages = await findUsages(trx, 'ExecutionEnvironment', id);
    if (usages.length > 0) throw inUseError('ExecutionEnvironment', `Execution environment ${row.given_id}`, usages);
    await deleteExecutionEnvironmentById(trx, id);
  });
}
