import { sql, type Selectable } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';

/** SQL of the links between Plinth users and their accounts on self-hosted Git servers. */
export type GitIdentityRow = Selectable<Database['git_identities']>;

/** A link with what a person reads of its server. */
export type GitIdentityListRow = GitIdentityRow & { server_name: string; provider: string; organization_id: string };

/** The server of any organization: a sign-in starts before anyone says which organization they are in. */
export function findGitServerById(db: Executor, id: string) {
  return db.selectFrom('git_self_hosted_servers').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findGitServerNames(db: Executor, ids: string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('git_self_hosted_servers').select(['id', 'name', 'provider']).where('id', 'in', ids).execute();
}

export function findIdentityBySubject(db: Executor, serverId: string, subject: string) {
  return db.selectFrom('git_identities').selectAll().where('git_server_id', '=', serverId).where('subject', '=', subject).executeTakeFirst();
}

/**
 * linkIdentity links the account to the user, replacing the user's earlier link to the same server.
 * Undefined when the account is linked to someone else already (nothing is changed then). The earlier
 * link is deleted, not rewritten, when it names another account: its sign-ins' keys and sessions go
 * with it (api_keys.git_identity_id), so re-linking away from an account ends what it signed in.
 */
export async function linkIdentity(db: Executor, v: { id: string; userId: string; serverId: string; subject: string; login: string }) {
  const taken = await findIdentityBySubject(db, v.serverId, v.subject);
  if (taken && taken.user_id !== v.userId) return undefined;
  await db.deleteFrom('git_identities').where('user_id', '=', v.userId).where('git_server_id', '=', v.serverId).where('subject', '<>', v.subject).execute();
  return db
    .insertInto('git_identities')
    .values({ id: v.id, user_id: v.userId, git_server_id: v.serverId, subject: v.subject, login: v.login })
    .onConflict((oc) => oc.columns(['user_id', 'git_server_id']).doUpdateSet({ login: v.login, created_at: sql<Date>`now()` }))
    .returningAll()
    .executeTakeFirst();
}

export async function updateIdentityLogin(db: Executor, id: string, login: string): Promise<void> {
  await db.updateTable('git_identities').set({ login }).where('id', '=', id).where('login', '<>', login).execute();
}

function identitiesWithServers(db: Executor) {
  return db
    .selectFrom('git_identities')
    .innerJoin('git_self_hosted_servers as s', 's.id', 'git_identities.git_server_id')
    .selectAll('git_identities')
    .select(['s.name as server_name', 's.provider', 's.organization_id']);
}

/** A user's links, to servers of any organization (each is theirs, whichever organization asks), or of `organizationId` only. */
export function findUserIdentitiesPage(db: Executor, userId: string, page: PageRequest, organizationId?: string): Promise<GitIdentityListRow[]> {
  let query = identitiesWithServers(db).where('git_identities.user_id', '=', userId);
  if (organizationId) query = query.where('s.organization_id', '=', organizationId);
  return query.$call(keyset(page, 'git_identities.id')).execute();
}

/** The names of the servers of `organizationId` the user is linked to. */
export async function findLinkedServerNames(db: Executor, userId: string, organizationId: string): Promise<string[]> {
  const rows = await identitiesWithServers(db)
    .where('git_identities.user_id', '=', userId)
    .where('s.organization_id', '=', organizationId)
    .orderBy('s.name')
    .execute();
  return rows.map((r) => `${r.provider.toLowerCase()}:${r.server_name}`);
}

export async function deleteServerIdentities(db: Executor, serverId: string): Promise<void> {
  await db.deleteFrom('git_identities').where('git_server_id', '=', serverId).execute();
}

export async function deleteUserIdentity(db: Executor, userId: string, id: string, organizationId?: string): Promise<boolean> {
  let query = db.deleteFrom('git_identities').where('id', '=', id).where('user_id', '=', userId);
  if (organizationId) {
    query = query.where('git_server_id', 'in', (eb) => eb.selectFrom('git_self_hosted_servers').select('id').where('organization_id', '=', organizationId));
  }
  return Number((await query.executeTakeFirst()).numDeletedRows) > 0;
}
