import { sql, type Selectable } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import type { GitFlowKind, GitProvider } from '../platform/db/enums.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';

/** SQL of self-hosted Git servers, their OAuth connections, app installations and single-use flow states. */
export type GitServerRow = Selectable<Database['git_self_hosted_servers']>;
export type GitConnectionRow = Selectable<Database['git_oauth_connections']>;
export type GitAppInstallationRow = Selectable<Database['git_app_installations']>;

export async function insertGitServer(
  db: Executor,
  v: {
    id: string;
    organizationId: string;
    name: string;
    provider: GitProvider;
    baseUrl: string;
    authorizeUrl: string | null;
    tokenUrl: string | null;
    userUrl: string | null;
    clientId: string;
    clientSecretSealed: string;
    scopes: string;
  },
) {
  return db
    .insertInto('git_self_hosted_servers')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      name: v.name,
      provider: v.provider,
      base_url: v.baseUrl,
      authorize_url: v.authorizeUrl,
      token_url: v.tokenUrl,
      user_url: v.userUrl,
      client_id: v.clientId,
      client_secret_sealed: v.clientSecretSealed,
      scopes: v.scopes,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findGitServer(db: Executor, organizationId: string, id: string, lock: 'update' | 'share' | 'none' = 'none') {
  let q = db.selectFrom('git_self_hosted_servers').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock === 'update') q = q.forUpdate();
  if (lock === 'share') q = q.forShare();
  return q.executeTakeFirst();
}

export function findGitServersPage(db: Executor, organizationId: string, page: PageRequest) {
  return db
    .selectFrom('git_self_hosted_servers')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .$call(keyset(page, 'git_self_hosted_servers.id'))
    .execute();
}

export function updateGitServer(
  db: Executor,
  id: string,
  c: {
    name?: string;
    authorize_url?: string | null;
    token_url?: string | null;
    user_url?: string | null;
    client_id?: string;
    client_secret_sealed?: string;
    scopes?: string;
  },
) {
  return db
    .updateTable('git_self_hosted_servers')
    .set({ ...c, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteGitServerById(db: Executor, id: string) {
  await db.deleteFrom('git_self_hosted_servers').where('id', '=', id).execute();
}

export function findConnection(db: Executor, organizationId: string, serverId: string, lock = false) {
  let q = db.selectFrom('git_oauth_connections').selectAll().where('organization_id', '=', organizationId).where('server_id', '=', serverId);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function findConnectedServerIds(db: Executor, organizationId: string, serverIds: string[]): Promise<Set<string>> {
  if (serverIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('git_oauth_connections')
    .select('server_id')
    .where('organization_id', '=', organizationId)
    .where('server_id', 'in', serverIds)
    .execute();
  return new Set(rows.map((r) => r.server_id));
}

/** upsertConnection stores the organization's tokens for a server (a new login replaces the old ones). */
export async function upsertConnection(
  db: Executor,
  v: {
    id: string;
    organizationId: string;
    serverId: string;
    connectedById: string | null;
    accessTokenSealed: (id: string) => string;
    refreshTokenSealed: (id: string) => string | null;
    expiresAt: Date | null;
  },
) {
  const existing = await findConnection(db, v.organizationId, v.serverId, true);
  const id = existing?.id ?? v.id;
  const values = {
    connected_by_id: v.connectedById,
    access_token_sealed: v.accessTokenSealed(id),
    refresh_token_sealed: v.refreshTokenSealed(id),
    expires_at: v.expiresAt,
  };
  if (existing) {
    await db
      .updateTable('git_oauth_connections')
      // A refresh of the old grant still under way stores nothing over this login (updateConnectionTokens).
      .set({ ...values, refreshing_until: null, updated_at: sql<Date>`now()` })
      .where('id', '=', id)
      .execute();
  } else {
    await db
      .insertInto('git_oauth_connections')
      .values({ id, organization_id: v.organizationId, server_id: v.serverId, ...values })
      .execute();
  }
}

/**
 * updateConnectionTokens stores refreshed tokens and ends the refresh, if the caller's `claim` still
 * stands (a new login, or another use that took over a lapsed claim, wins): true when stored.
 */
export async function updateConnectionTokens(
  db: Executor,
  id: string,
  claim: Date,
  c: { access_token_sealed: string; refresh_token_sealed: string | null; expires_at: Date | null },
): Promise<boolean> {
  const stored = await db
    .updateTable('git_oauth_connections')
    .set({ ...c, refreshing_until: null, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('refreshing_until', '=', claim)
    .returning('id')
    .executeTakeFirst();
  return stored !== undefined;
}

/**
 * claimTokenRefresh makes the caller the one refreshing the connection's token for `leaseMs`, unless
 * another is, or the tokens changed since the caller read `refreshSealed` (refreshed meanwhile: the
 * caller reads them again). Answers the claim (a time to the millisecond, which a Date holds exactly),
 * or undefined.
 */
export async function claimTokenRefresh(db: Executor, id: string, refreshSealed: string, leaseMs: number): Promise<Date | undefined> {
  const claimed = await db
    .updateTable('git_oauth_connections')
    .set({ refreshing_until: sql<Date>`date_trunc('milliseconds', now() + make_interval(secs => ${leaseMs / 1000}))` })
    .where('id', '=', id)
    .where('refresh_token_sealed', '=', refreshSealed)
    .where((eb) => eb.or([eb('refreshing_until', 'is', null), eb('refreshing_until', '<', sql<Date>`now()`)]))
    .returning('refreshing_until')
    .executeTakeFirst();
  return claimed?.refreshing_until ?? undefined;
}

/** releaseTokenRefresh ends a refresh that failed, if its claim still stands: the next use tries again. */
export async function releaseTokenRefresh(db: Executor, id: string, claim: Date): Promise<void> {
  await db.updateTable('git_oauth_connections').set({ refreshing_until: null }).where('id', '=', id).where('refreshing_until', '=', claim).execute();
}

/** insertAppInstallation records an installation; an installation already recorded is returned as it is (whichever organization holds it). */
export async function insertAppInstallation(db: Executor, v: { id: string; organizationId: string; installationId: string; installedById: string | null }) {
  const inserted = await db
    .insertInto('git_app_installations')
    .values({ id: v.id, organization_id: v.organizationId, installation_id: v.installationId, installed_by_id: v.installedById })
    .onConflict((oc) => oc.column('installation_id').doNothing())
    .returningAll()
    .executeTakeFirst();
  return inserted ?? db.selectFrom('git_app_installations').selectAll().where('installation_id', '=', v.installationId).executeTakeFirstOrThrow();
}

export function findAppInstallation(db: Executor, organizationId: string, id: string, lock: 'share' | 'none' = 'none') {
  let q = db.selectFrom('git_app_installations').selectAll().where('organization_id', '=', organizationId).where('id', '=', id);
  if (lock === 'share') q = q.forShare();
  return q.executeTakeFirst();
}

export function findAppInstallationsPage(db: Executor, organizationId: string, page: PageRequest) {
  return db
    .selectFrom('git_app_installations')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .$call(keyset(page, 'git_app_installations.id'))
    .execute();
}

export async function insertFlowState(
  db: Executor,
  v: { nonce: string; kind: GitFlowKind; organizationId: string; codeVerifierSealed: string | null; expiresAt: Date },
) {
  // Expired states are of no use to anyone: each new one sweeps a few.
  await db.deleteFrom('git_flow_states').where('expires_at', '<', sql<Date>`now() - interval '1 hour'`).execute();
  await db
    .insertInto('git_flow_states')
    .values({ nonce: v.nonce, kind: v.kind, organization_id: v.organizationId, code_verifier_sealed: v.codeVerifierSealed, expires_at: v.expiresAt })
    .execute();
}

/**
 * consumeFlowState marks a state used, once: of two callbacks with the same state exactly one gets the
 * row; an expired, unknown or already used one gets nothing.
 */
export function consumeFlowState(db: Executor, nonce: string, kind: GitFlowKind) {
  return db
    .updateTable('git_flow_states')
    .set({ used_at: sql<Date>`now()` })
    .where('nonce', '=', nonce)
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}
