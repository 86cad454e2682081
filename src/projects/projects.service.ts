import type { Principal } from '../platform/auth/principal.ts';
import { isEmptyPatch, isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { deleteDependents, findUsages, inUseError } from '../platform/db/dependents.ts';
import { ConflictError, NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import {
  deleteProjectById,
  findProjectById,
  findProjectsPage,
  insertProject,
  projectRowToProject,
  updateProject as updateProjectRow,
} from './projects.repo.ts';
import type { CreateProject, UpdateProject } from './projects.schema.ts';
import type { NamedFilter } from '../platform/schema.ts';

/** getProjectRow reads a project of the caller's organization; another organization's is a 404 (a reference in a body too). */
export async function getProjectRow(db: Executor, principal: Principal, id: string, lock?: 'update' | 'keyShare') {
  const row = await findProjectById(db, principal.organizationId, id, lock);
  if (!row) throw new NotFoundError('Project', id);
  return row;
}

/** createProject adds a project; its givenId is unique within the organization (409 otherwise). */
export async function createProject(db: Db, principal: Principal, input: CreateProject) {
  const row = await rethrowAs(
    insertProject(db, { id: newId(), organizationId: principal.organizationId, ...input }),
    isUniqueViolation,
    () => new ConflictError('Project', 'ALREADY_EXISTS', `A project with givenId ${input.givenId} already exists`),
  );
  return projectRowToProject(row);
}

export async function getProject(db: Db, principal: Principal, id: string) {
  return projectRowToProject(await getProjectRow(db, principal, id));
}

export async function listProjects(db: Db, principal: Principal, filter: NamedFilter, page: PageRequest) {
  const { items, meta } = toPage(await findProjectsPage(db, principal.organizationId, filter, page), page, (r) => r.id);
  return { items: items.map(projectRowToProject), meta };
}

export async function updateProject(db: Db, principal: Principal, id: string, changes: UpdateProject) {
  const current = await getProjectRow(db, principal, id);
  if (isEmptyPatch(changes)) return projectRowToProject(current);
  return projectRowToProject(await updateProjectRow(db, id, changes));
}

/**
 * deleteProject removes a project that nothing uses any more (its environments, stacks and pipelines
 * say, see platform/db/dependents.ts), with what goes with it (the default values set on it). The row
 * lock makes a concurrent environment or stack insert wait, then fail its foreign key.
 */
export async function deleteProject(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await getProjectRow(trx, principal, id, 'update');
    const usages = await findUsages(trx, 'Project', id);
    if (usages.length > 0) throw inUseError('Project', `Project ${row.given_id}`, usages);
    await deleteDependents(trx, 'Project', id);
    await deleteProjectById(trx, id);
  });
}
