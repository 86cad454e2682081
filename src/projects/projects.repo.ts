import type { Selectable } from 'kysely';
import type { ProjectsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { Project } from './projects.schema.ts';
import type { NamedFilter } from '../platform/schema.ts';

export type ProjectRow = Selectable<ProjectsTable>;

export function projectRowToProject(row: ProjectRow): Project {
  return {
    id: row.id,
    organizationId: row.organization_id,
    givenId: row.given_id,
    name: row.name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.description !== null ? { description: row.description } : {}),
    ...(row.error ? { error: row.error } : {}),
  };
}

export function insertProject(db: Executor, values: { id: string; organizationId: string; givenId: string; name: string; description?: string }) {
  return db
    .insertInto('projects')
    .values({
      id: values.id,
      organization_id: values.organizationId,
      given_id: values.givenId,
      name: values.name,
      description: values.description ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * findProjectById reads one project of the organization. `lock`: `update` for its delete (a concurrent
 * insert of something referencing it waits, then fails its foreign key); `keyShare` for a write that
 * needs it to exist until commit without a foreign key to say so (a default value set on it).
 */
export function findProjectById(db: Executor, organizationId: string, id: string, lock?: 'update' | 'keyShare') {
  let query = db.selectFrom('projects').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock === 'update') query = query.forUpdate();
  if (lock === 'keyShare') query = query.forKeyShare();
  return query.executeTakeFirst();
}

/** The givenIds of the given projects, by id: for naming what belongs to them. */
export async function findProjectGivenIds(db: Executor, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('projects').select(['id', 'given_id']).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, r.given_id]));
}

/** One keyset page of the organization's projects; served by the (organization_id, id) index at any depth. */
export function projectsPageQuery(db: Executor, organizationId: string, filter: NamedFilter, page: PageRequest) {
  let query = db.selectFrom('projects').selectAll().where('organization_id', '=', organizationId);
  if (filter.givenId !== undefined) query = query.where('given_id', '=', filter.givenId);
  if (filter.name !== undefined) query = query.where('name', '=', filter.name);
  return query.$call(keyset(page, 'projects.id'));
}

export function findProjectsPage(db: Executor, organizationId: string, filter: NamedFilter, page: PageRequest) {
  return projectsPageQuery(db, organizationId, filter, page).execute();
}

export function updateProject(db: Executor, id: string, changes: { name?: string; description?: string }) {
  return db
    .updateTable('projects')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function deleteProjectById(db: Executor, id: string) {
  return db.deleteFrom('projects').where('id', '=', id).execute();
}
