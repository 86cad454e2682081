import { sql, type Selectable } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { registerDependent, type UsageRow } from '../platform/db/dependents.ts';
import type { GitAuthType, GitProvider } from '../platform/db/enums.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { NamedFilter } from '../platform/schema.ts';

export type CodeSourceRow = Selectable<Database['code_sources']>;

export interface CodeSourceValues {
  name: string;
  given_id: string | null;
  url: string;
  provider: GitProvider;
  auth_type: GitAuthType;
  token_sealed: string | null;
  git_app_installation_id: string | null;
  git_self_hosted_server_id: string | null;
  webhook_secret_sealed: string | null;
}

export function insertCodeSource(db: Executor, id: string, organizationId: string, v: CodeSourceValues) {
  return db
    .insertInto('code_sources')
    .values({ id, organization_id: organizationId, ...v })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findCodeSource(db: Executor, organizationId: string, id: string, lock: 'update' | 'share' | 'none' = 'none') {
  let q = db.selectFrom('code_sources').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock === 'update') q = q.forUpdate();
  if (lock === 'share') q = q.forShare();
  return q.executeTakeFirst();
}

/** A code source by id alone: for the public webhook route and the worker, which know no organization yet. */
export function findCodeSourceById(db: Executor, id: string) {
  return db.selectFrom('code_sources').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Which of `ids` name code sources that exist, in any organization: what a host's cache sweep keeps. */
export async function existingCodeSourceIds(db: Executor, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('code_sources').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

/**
 * findCodeSourceOfStack is the code source a run of the stack may check out: one of the stack's
 * organization, or the source of the global module version the stack's instance deploys (a global
 * module's code lives in the organization that published it).
 */
export function findCodeSourceOfStack(db: Executor, id: string, stack: { id: string; organizationId: string }) {
  return db
    .selectFrom('code_sources')
    .selectAll()
    .where('id', '=', id)
    .where((eb) =>
      eb.or([
        eb('organization_id', '=', stack.organizationId),
        eb.exists(
          eb
            .selectFrom('module_instances as i')
            .innerJoin('module_versions as v', 'v.id', 'i.module_version_id')
            .select('i.id')
            .where('i.stack_id', '=', stack.id)
            .where('v.organization_id', 'is', null)
            .where('v.code_source_id', '=', id),
        ),
      ]),
    )
    .executeTakeFirst();
}

export function findCodeSourcesPage(db: Executor, organizationId: string, filter: NamedFilter, page: PageRequest) {
  let query = db.selectFrom('code_sources').selectAll().where('organization_id', '=', organizationId);
  if (filter.givenId !== undefined) query = query.where('given_id', '=', filter.givenId);
  if (filter.name !== undefined) query = query.where('name', '=', filter.name);
  return query.$call(keyset(page, 'code_sources.id')).execute();
}

export function updateCodeSourceRow(db: Executor, id: string, v: Partial<CodeSourceValues>) {
  return db
    .updateTable('code_sources')
    .set({ ...v, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteCodeSourceById(db: Executor, id: string) {
  await db.deleteFrom('code_sources').where('id', '=', id).execute();
}

async function sourcesUsing(db: Executor, column: 'git_self_hosted_server_id' | 'git_app_installation_id', id: string, sample: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('code_sources')
    .select(['id', 'given_id'])
    .where(column, '=', id)
    .orderBy('id')
    .limit(sample + 1)
    .execute();
  return rows.map((r) => ({ kind: 'code sources', ref: r.given_id ?? r.id }));
}

registerDependent('GitSelfHostedServer', { findUsages: (db, id, sample) => sourcesUsing(db, 'git_self_hosted_server_id', id, sample) });
registerDependent('GitAppInstallation', { findUsages: (db, id, sample) => sourcesUsing(db, 'git_app_installation_id', id, sample) });
