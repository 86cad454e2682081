import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { AppError, ConflictError, NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { deleteDefaultValuesOfParent } from '../default-values/default-values.repo.ts';
import { findExecutionEnvironmentById } from '../execution-environments/execution-environments.repo.ts';
import { isEmptyPatch, isForeignKeyViolation, isUniqueViolation, rethrowAs } from '../projects/db-errors.ts';
import { inUseError } from '../projects/in-use.ts';
import { findProjectById } from '../projects/projects.repo.ts';
import {
  deleteEnvironmentById,
  environmentRowToEnvironment,
  findEnvironmentById,
  findEnvironmentsPage,
  findEnvironmentUsers,
  insertEnvironment,
  updateEnvironment as updateEnvironmentRow,
} from './environments.repo.ts';
import type { CreateEnvironment, EnvironmentListQuery, UpdateEnvironment } from './environments.schema.ts';

/** References in a body must name resources of the caller's organization; another one's look missing (404), as everywhere. */
async function assertReferences(db: Executor, principal: Principal, refs: { projectId?: string; executionEnvironmentId?: string | null }) {
  if (refs.projectId !== undefined && !(await findProjectById(db, principal.organizationId, refs.projectId))) {
    throw new NotFoundError('Project', refs.projectId);
  }
  const eeId = refs.executionEnvironmentId;
  if (eeId && !(await findExecutionEnvironmentById(db, principal.organizationId, eeId))) {
    throw new NotFoundError('ExecutionEnvironment', eeId);
  }
}

export async function getEnvironmentRow(db: Executor, principal: Principal, id: string) {
  const row = await findEnvironmentById(db, principal.organizationId, id);
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
  const { items, meta } = toPage(await findEnvironmentsPage(db, principal.organizationId, page, query.projectId), page, (r) => r.id);
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
 * deleteEnvironment removes an environment without stacks, with the default values set on it. The row
 * lock makes a concurrent stack insert (its foreign key needs this row) wait, then fail.
 */
export async function deleteEnvironment(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await findEnvironmentById(trx, principal.organizationId, id, true);
    if (!row) throw new NotFoundError('Environment', id);
    const usages = await findEnvironmentUsers(trx, id);
    if (usages.length > 0) throw inUseError('Environment', `Environment ${row.given_id}`, usages);
    await deleteDefaultValuesOfParent(trx, id);
    await deleteEnvironmentById(trx, id);
  });
}
