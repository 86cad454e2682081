import { sql } from 'kysely';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { UsageRow } from '../projects/in-use.ts';
import type { Environment } from './environments.schema.ts';

export interface EnvironmentRow {
  id: string;
  organization_id: string;
  project_id: string;
  given_id: string;
  name: string;
  description: string | null;
  execution_environment_id: string | null;
  created_at: Date;
  updated_at: Date;
}

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
    .executeTakeFirstOrThrow() as Promise<EnvironmentRow>;
}

export function findEnvironmentById(db: Executor, organizationId: string, id: string, lock = false) {
  let query = db.selectFrom('environments').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst() as Promise<EnvironmentRow | undefined>;
}

export function findEnvironmentsPage(db: Executor, organizationId: string, page: PageRequest, projectId?: string) {
  let query = db.selectFrom('environments').selectAll().where('organization_id', '=', organizationId);
  if (projectId !== undefined) query = query.where('project_id', '=', projectId);
  return query.$call(keyset(page, 'environments.id')).execute() as Promise<EnvironmentRow[]>;
}

export function updateEnvironment(
  db: Executor,
  id: string,
  changes: { name?: string; description?: string; execution_environment_id?: string | null },
) {
  return db
    .updateTable('environments')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow() as Promise<EnvironmentRow>;
}

export function deleteEnvironmentById(db: Executor, id: string) {
  return db.deleteFrom('environments').where('id', '=', id).execute();
}

/** The stacks that still live in this environment (their givenId, else their id). */
export async function findEnvironmentUsers(db: Executor, id: string, sample = 10): Promise<UsageRow[]> {
  const { rows } = await sql<{ ref: string }>`
    select coalesce(given_id, name, id) as ref from stacks where environment_id = ${id} order by id limit ${sample + 1}`.execute(db);
  return rows.map((r) => ({ kind: 'stacks', ref: r.ref }));
}
