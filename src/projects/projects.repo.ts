import { sql } from 'kysely';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { Project } from './projects.schema.ts';
import type { UsageRow } from './in-use.ts';

export interface ProjectRow {
  id: string;
  organization_id: string;
  given_id: string;
  name: string;
  description: string | null;
  error: unknown;
  created_at: Date;
  updated_at: Date;
}

export function projectRowToProject(row: ProjectRow): Project {
  return {
    id: row.id,
    organizationId: row.organization_id,
    givenId: row.given_id,
    name: row.name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.description !== null ? { description: row.description } : {}),
    ...(row.error ? { error: row.error as Record<string, unknown> } : {}),
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
    .executeTakeFirstOrThrow() as Promise<ProjectRow>;
}

export function findProjectById(db: Executor, organizationId: string, id: string) {
  return db.selectFrom('projects').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst() as Promise<
    ProjectRow | undefined
  >;
}

/** Locks the project row so a concurrent environment insert (whose foreign key needs it) waits for the delete. */
export function lockProjectById(db: Executor, organizationId: string, id: string) {
  return db
    .selectFrom('projects')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst() as Promise<ProjectRow | undefined>;
}

/** One keyset page of the organization's projects; served by the (organization_id, id) index at any depth. */
export function projectsPageQuery(db: Executor, organizationId: string, page: PageRequest) {
  return db.selectFrom('projects').selectAll().where('organization_id', '=', organizationId).$call(keyset(page, 'projects.id'));
}

export function findProjectsPage(db: Executor, organizationId: string, page: PageRequest) {
  return projectsPageQuery(db, organizationId, page).execute() as Promise<ProjectRow[]>;
}

export function updateProject(db: Executor, id: string, changes: { name?: string; description?: string }) {
  return db
    .updateTable('projects')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow() as Promise<ProjectRow>;
}

export function deleteProjectById(db: Executor, id: string) {
  return db.deleteFrom('projects').where('id', '=', id).execute();
}

/** What still uses a project: its environments, stacks and pipelines (givenIds or ids, a few of each). */
export async function findProjectUsers(db: Executor, id: string, sample = 10) {
  const { rows } = await sql<UsageRow>`
    select kind, ref from (
      (select 'environments' as kind, given_id as ref from environments where project_id = ${id} order by id limit ${sample + 1})
      union all
      (select 'stacks', coalesce(given_id, id) from stacks where project_id = ${id} order by id limit ${sample + 1})
      union all
      (select 'pipelines', coalesce(given_id, id) from pipelines where project_id = ${id} order by id limit ${sample + 1})
    ) used`.execute(db);
  return rows;
}
