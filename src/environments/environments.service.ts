import type { Principal } from '../platform/auth/principal.ts';
import { isEmptyPatch, isForeignKeyViolation, isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { deleteDependents, findUsages, inUseError } from '../platform/db/dependents.ts';
import { AppError, ConflictError, NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { getExecutionEnvironmentRow } from '../execution-environments/execution-environments.service.ts';
import { getProjectRow } from '../projects/projects.service.ts';
import {
  deleteEnvironmentById,
  environmentRowToEnvironment,
  findEnvironmentById,
  findEnvironmentsPage,
  insertEnvironment,
  updateEnvironment as updateEnvironmentRow,
} from './environments.repo.ts';
import type { CreateEnvironment, EnvironmentListQuery, UpdateEnvironment } from './environments.schema.ts';

/** References in a body must name resources of the caller's organization; another one's look missing (404), as everywhere. */
async function assertReferences(db: Executor, principal: Principal, refs: { projectId?: string; executionEnvironmentId?: string | null }) {
  if (refs.projectId !== undefined) await getProjectRow(db, principal, refs.projectId);
  if (refs.executionEnvironmentId) await getExecutionEnvironmentRow(db, principal, refs.executionEnvironmentId);
}

/** getEnvironmentRow reads an environment of the caller's organization; another organization's is a 404 (a reference in a body too). */
export async function getEnvironmentRow(db: Executor, principal: Principal, id: string, lock?: 'update' | 'keyShare') {
  const row = await findEnvironmentById(db, principal.organizationId, id, lock);
  if (!row) throw new NotFoundError('Environment', id);
  return row;
}

/** createEnvironment adds an environment to a project; its givenId is unique within that project. */
export async function createEnvironment(db: Db, principal: Principal, input: CreateEnvironment) {
  await assertReferences(db, principal, input);
  const insert = insertEnvironment(db, { id: newId(), organizationId: principal.organizationId, ...input });
  const row = await rethrowAs(
    rethrowAs(insert, isUniqueViolation, () => new ConflictError('Environment', 'ALREADY_EXISTS', `The project already has an environment ${input.givenId}`)),
    isForeignKeyViolation,
    () => new AppError(404, 'Api:Reference:NOT_FOUND', 'The project or execution environment was deleted meanwhile'),
  );
  return environmentRowToEnvironment(row);
}

export async function getEnvironment(db: Db, principal: Principal, id: string) {
  return environmentRowToEnvironment(await getEnvironmentRow(db, principal, id));
}

export async function listEnvironments(db: Db, principal: Principal, page: PageRequest, query: EnvironmentListQuery) {
  const { items, meta } = toPage(await findEnvironmentsPage(db, principal.organizationId, page, query), page, (r) => r.id);
  return { items: items.map(environmentRowToEnvironment), meta };
}

export async function updateEnvironment(db: Db, principal: Principal, id: string, changes: UpdateEnvironment) {
  const current = await getEnvironmentRow(db, principal, id);
  if (isEmptyPatch(changes)) return environmentRowToEnvironment(current);
  await assertReferences(db, principal, { executionEnvironmentId: changes.executionEnvironmentId });
  const update = updateEnvironmentRow(db, id, {
    name: changes.name,
    description: changes.description,
    execution_environment_id: changes.executionEnvironmentId,
  });
  const row = await rethrowAs(update, isForeignKeyViolation, () => new NotFoundError('ExecutionEnvironment', changes.executionEnvironmentId ?? ''));
  return environmentRowToEnvironment(row);
}

/**
 * deleteEnvironment removes an environment without stacks, with what goes with it (the default values
 * set on it; see platform/db/dependents.ts). The row lock makes a concurrent stack insert (its foreign
 * key needs this row) wait, then fail.
 */
export async function deleteEnvironment(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await getEnvironmentRow(trx, principal, id, 'update');
    const usages = await findUsages(trx, 'Environment', id);
    if (usages.length > 0) throw inUseError('Environment', `Environment ${row.given_id}`, usages);
    await deleteDependents(trx, 'Environment', id);
    await deleteEnvironmentById(trx, id);
  });
}
