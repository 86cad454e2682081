import type { Selectable } from 'kysely';
import type { EnvironmentsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import { findProjectGivenIds } from '../projects/projects.repo.ts';
import type { Environment } from './environments.schema.ts';
import type { NamedFilter } from '../platform/schema.ts';
import { nameHolds } from '../platform/db/search.ts';

export type EnvironmentRow = Selectable<EnvironmentsTable>;

export function environmentRowToEnvironment(row: EnvironmentRow): Environment {
  return {
    id: row.id,
    organizationId: row.organization_id,
    projectId: row.project_id,
    givenId: row.given_id,
    name: row.name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.description !== null ? { description: row.description } : {}),
    ...(row.execution_environment_id !== null ? { executionEnvironmentId: row.execution_environment_id } : {}),
  };
}

export function insertEnvironment(
  db: Executor,
  v: { id: string; organizationId: string; projectId: string; givenId: string; name: string; description?: string; executionEnvironmentId?: string },
) {
  return db
    .insertInto('environments')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      project_id: v.projectId,
      given_id: v.givenId,
      name: v.name,
      description: v.description ?? null,
      execution_environment_id: v.executionEnvironmentId ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** `lock`: `update` for its delete; `keyShare` for a write that needs it to exist until commit (a default value set on it). */
export function findEnvironmentById(db: Executor, organizationId: string, id: string, lock?: 'update' | 'keyShare') {
  let query = db.selectFrom('environments').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock === 'update') query = query.forUpdate();
  if (lock === 'keyShare') query = query.forKeyShare();
  return query.executeTakeFirst();
}

export function findEnvironmentsPage(db: Executor, organizationId: string, page: PageRequest, filter: NamedFilter & { projectId?: string; search?: string }) {
  let query = db.selectFrom('environments').selectAll().where('organization_id', '=', organizationId);
  if (filter.projectId !== undefined) query = query.where('project_id', '=', filter.projectId);
  if (filter.givenId !== undefined) query = query.where('given_id', '=', filter.givenId);
  if (filter.name !== undefined) query = query.where('name', '=', filter.name);
  if (filter.search !== undefined) query = query.where(nameHolds(filter.search));
  return query.$call(keyset(page, 'environments.id')).execute();
}

export function updateEnvironment(db: Executor, id: string, changes: { name?: string; description?: string; execution_environment_id?: string | null }) {
  return db
    .updateTable('environments')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function deleteEnvironmentById(db: Executor, id: string) {
  return db.deleteFrom('environments').where('id', '=', id).execute();
}

/** The project's environments (a project with environments cannot be deleted). */
async function findEnvironmentsOfProject(db: Executor, projectId: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('environments')
    .select('given_id')
    .where('project_id', '=', projectId)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'environments', ref: r.given_id }));
}

/** The environments whose runs execute in the execution environment, as `<project>/<environment>`. */
async function findEnvironmentsOfExecutionEnvironment(db: Executor, id: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('environments')
    .select(['project_id', 'given_id'])
    .where('execution_environment_id', '=', id)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  const projects = await findProjectGivenIds(db, [...new Set(rows.map((r) => r.project_id))]);
  return rows.map((r) => ({ kind: 'environments', ref: `${projects.get(r.project_id) ?? r.project_id}/${r.given_id}` }));
}

registerDependent('Project', { findUsages: findEnvironmentsOfProject });
registerDependent('ExecutionEnvironment', { findUsages: findEnvironmentsOfExecutionEnvironment });
