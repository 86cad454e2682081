import type { Principal } from '../platform/auth/principal.ts';
import type { Config } from '../platform/config.ts';
import { isEmptyPatch } from '../platform/db/db-errors.ts';
import type { Db } from '../platform/db/db.ts';
import { findUsages, inUseError } from '../platform/db/dependents.ts';
import { NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { deleteServerIdentities } from './git-identities.repo.ts';
import { signInUrl, userInfoUrl } from './git-identity.service.ts';
import { oauthEndpoints } from './git-oauth.service.ts';
import {
  deleteGitServerById,
  findConnectedServerIds,
  findGitServer,
  findGitServersPage,
  insertGitServer,
  updateGitServer as updateGitServerRow,
  type GitServerRow,
} from './git-servers.repo.ts';
import type { CreateGitSelfHostedServer, GitSelfHostedServer, UpdateGitSelfHostedServer } from './git-servers.schema.ts';

const secretContext = (id: string) => `git_self_hosted_servers.client_secret:${id}`;

/** The client secret is write-only: the resource says which endpoints are in use and whether tokens are held. */
function serverToApi(config: Config, row: GitServerRow, connected: boolean): GitSelfHostedServer {
  const endpoints = oauthEndpoints(row);
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    provider: row.provider,
    baseUrl: row.base_url,
    authorizeUrl: endpoints.authorize,
    tokenUrl: endpoints.token,
    userUrl: userInfoUrl(row),
    clientId: row.client_id,
    scopes: row.scopes,
    connected,
    loginUrl: `${config.publicUrl.replace(/\/+$/, '')}/gitoauth/self-hosted/${row.id}/login`,
    linkUrl: `${config.publicUrl.replace(/\/+$/, '')}/gitoauth/self-hosted/${row.id}/link`,
    signInUrl: signInUrl(config, row.id),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

async function withConnection(db: Db, config: Config, row: GitServerRow) {
  return serverToApi(config, row, (await findConnectedServerIds(db, row.organization_id, [row.id])).has(row.id));
}

export async function createGitServer(db: Db, secrets: SecretBox, config: Config, principal: Principal, input: CreateGitSelfHostedServer) {
  const id = newId();
  const row = await insertGitServer(db, {
    id,
    organizationId: principal.organizationId,
    name: input.name,
    provider: input.provider,
    baseUrl: input.baseUrl.replace(/\/+$/, ''),
    authorizeUrl: input.authorizeUrl ?? null,
    tokenUrl: input.tokenUrl ?? null,
    userUrl: input.userUrl ?? null,
    clientId: input.clientId,
    clientSecretSealed: secrets.seal(input.clientSecret, secretContext(id)),
    scopes: input.scopes ?? '',
  });
  return serverToApi(config, row, false);
}

export async function getGitServer(db: Db, config: Config, principal: Principal, id: string) {
  const row = await findGitServer(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('GitSelfHostedServer', id);
  return withConnection(db, config, row);
}

export async function listGitServers(db: Db, config: Config, principal: Principal, page: PageRequest) {
  const { items, meta } = toPage(await findGitServersPage(db, principal.organizationId, page), page, (r) => r.id);
  const connected = await findConnectedServerIds(
    db,
    principal.organizationId,
    items.map((r) => r.id),
  );
  return { items: items.map((r) => serverToApi(config, r, connected.has(r.id))), meta };
}

export async function updateGitServer(db: Db, secrets: SecretBox, config: Config, principal: Principal, id: string, changes: UpdateGitSelfHostedServer) {
  const current = await findGitServer(db, principal.organizationId, id);
  if (!current) throw new NotFoundError('GitSelfHostedServer', id);
  if (isEmptyPatch(changes)) return withConnection(db, config, current);
  const row = await db.transaction().execute(async (trx) => {
    // Compared under the row's lock: two changes at once must not each judge the other's unchanged.
    const locked = await findGitServer(trx, principal.organizationId, id, 'update');
    if (!locked) throw new NotFoundError('GitSelfHostedServer', id);
    // Who an account is was vouched for by the server as it was: another login or user API, or another
    // client, may name anyone, so the links made through the old ones go (their users link again).
    if (changesWhoVouches(locked, changes)) await deleteServerIdentities(trx, id);
    return updateGitServerRow(trx, id, {
      name: changes.name,
      authorize_url: changes.authorizeUrl,
      token_url: changes.tokenUrl,
      user_url: changes.userUrl,
      client_id: changes.clientId,
      client_secret_sealed: changes.clientSecret === undefined ? undefined : secrets.seal(changes.clientSecret, secretContext(id)),
      scopes: changes.scopes,
    });
  });
  return withConnection(db, config, row);
}

function changesWhoVouches(current: GitServerRow, changes: UpdateGitSelfHostedServer): boolean {
  const differs = <T>(given: T | undefined, now: T) => given !== undefined && given !== now;
  return (
    differs(changes.authorizeUrl, current.authorize_url) ||
    differs(changes.tokenUrl, current.token_url) ||
    differs(changes.userUrl, current.user_url) ||
    differs(changes.clientId, current.client_id) ||
    changes.clientSecret !== undefined
  );
}

/** deleteGitServer refuses while code sources authenticate through it; its connection goes with it. */
export async function deleteGitServer(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await findGitServer(trx, principal.organizationId, id, 'update');
    if (!row) throw new NotFoundError('GitSelfHostedServer', id);
    const usages = await findUsages(trx, 'GitSelfHostedServer', id);
    if (usages.length > 0) throw inUseError('GitSelfHostedServer', `Git server ${row.name}`, usages);
    await deleteGitServerById(trx, id);
  });
}
