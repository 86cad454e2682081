// A user's account on a self-hosted Git server, as a way to sign in to the web console: the user links
// it once (signed in already), and from then on the server's OAuth login signs them in. Both are an
// OAuth login whose answer is read through the server's user API (who the token belongs to), so the
// server only ever vouches for the accounts its own users linked. Neither flow keeps a row before the
// return leg (a sign-in starts with no credential at all): the state is sealed and carries its PKCE
// verifier, the browser that started it must send its binding cookie back, and the authorization code
// is single-use at the server.

import { randomBytes } from 'node:crypto';
import type { Principal } from '../platform/auth/principal.ts';
import type { Config } from '../platform/config.ts';
import type { Db } from '../platform/db/db.ts';
import { isUniqueViolation } from '../platform/db/db-errors.ts';
import { AppError, BadRequestError, ForbiddenError, NotFoundError } from '../platform/errors.ts';
import type { GitConfig } from '../platform/git-config.ts';
import { newId } from '../platform/ids.ts';
import { EgressDeniedError } from '../platform/outbound/address-policy.ts';
import { jsonObject, notAllowedError, outboundRequest, type OutboundResponse } from '../platform/outbound/http.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { assertSameBrowser, newFlowBinding, type FlowCookie, type IdentityPurpose } from './flow-binding.ts';
import { newNonce, openFlowState, safeReturnTo, sealFlowState, stateError, type FlowState } from './git-flow-state.ts';
import {
  deleteUserIdentity,
  findGitServerById,
  findGitServerNames,
  findIdentityBySubject,
  findUserIdentitiesPage,
  linkIdentity,
  updateIdentityLogin,
  type GitIdentityListRow,
} from './git-identities.repo.ts';
import { authorizationUrl, callbackUrl, oauthEndpoints, postToken } from './git-oauth.service.ts';
import { findGitServer, type GitServerRow } from './git-servers.repo.ts';
import type { CallbackQuery, GitIdentity } from './git-servers.schema.ts';

/** Where a server says who a token belongs to: as registered, else its provider's user API, else nowhere known. */
export function userInfoUrl(server: Pick<GitServerRow, 'base_url' | 'provider' | 'user_url'>): string | null {
  if (server.user_url) return server.user_url;
  const base = server.base_url.replace(/\/+$/, '');
  const host = new URL(base).host;
  switch (server.provider) {
    case 'GITHUB':
      return host === 'github.com' ? 'https://api.github.com/user' : `${base}/api/v3/user`;
    case 'GITLAB':
      return `${base}/api/v4/user`;
    case 'GITEA':
      return `${base}/api/v1/user`;
    case 'BITBUCKET':
      return host === 'bitbucket.org' ? 'https://api.bitbucket.org/2.0/user' : null;
    case 'GENERIC':
      return null;
  }
}

function requireUserInfoUrl(server: GitServerRow): string {
  const url = userInfoUrl(server);
  if (!url) {
    throw new AppError(422, 'Git:Identity:NO_USER_API', `Plinth does not know where ${server.name} says who a token belongs to: register its userUrl`);
  }
  return url;
}

/** The console page a sign-in through `serverId` starts at: what a user bookmarks, or an ADMIN shares. */
export function signInUrl(config: Config, serverId: string): string {
  return `${config.publicUrl.replace(/\/+$/, '')}/sign-in/git/${serverId}`;
}

async function startIdentityFlow(
  secrets: SecretBox,
  config: Config,
  server: GitServerRow,
  purpose: IdentityPurpose,
  userId: string | null,
  returnTo: string,
): Promise<{ location: string; cookie: FlowCookie }> {
  requireUserInfoUrl(server);
  const nonce = newNonce();
  const verifier = randomBytes(32).toString('base64url');
  const { cookie, hash } = newFlowBinding(purpose, nonce, config.git.stateTtlSeconds, config.publicUrl);
  const state = sealFlowState(secrets, {
    nonce,
    kind: 'IDENTITY',
    purpose,
    verifier,
    organizationId: server.organization_id,
    userId,
    serverId: server.id,
    returnTo,
    expiresAt: Date.now() + config.git.stateTtlSeconds * 1000,
    binding: hash,
  });
  return { location: authorizationUrl(config, server, state, verifier), cookie };
}

/** Where the OAuth callback hands a console sign-in on to. */
export function signInCallbackUrl(config: Config): string {
  return `${config.publicUrl.replace(/\/+$/, '')}/sign-in/git/callback`;
}

/** startIdentityLink (`GET /gitoauth/self-hosted/{id}/link`): the caller links their account on a server of their organization. */
export async function startIdentityLink(secrets: SecretBox, db: Db, config: Config, principal: Principal, serverId: string, returnTo: string | undefined) {
  if (principal.principalType !== 'MEMBERSHIP') {
    throw new ForbiddenError('A service account has no account on a Git server to link', 'Auth:Principal:NOT_A_USER');
  }
  const server = await findGitServer(db, principal.organizationId, serverId);
  if (!server) throw new NotFoundError('GitSelfHostedServer', serverId);
  return startIdentityFlow(secrets, config, server, 'LINK', principal.userId, safeReturnTo(returnTo, config.publicUrl));
}

/** startIdentitySignIn: a console sign-in through a server (of any organization: the link says who, and where). */
export async function startIdentitySignIn(secrets: SecretBox, db: Db, config: Config, serverId: string, returnTo: string) {
  const server = await findGitServerById(db, serverId);
  if (!server) throw new NotFoundError('GitSelfHostedServer', serverId);
  return startIdentityFlow(secrets, config, server, 'SIGN_IN', null, returnTo);
}

/** What the sign-in page says of a server before anyone signs in: its name, kind and where its login is. */
export async function signInServer(db: Db, serverId: string): Promise<{ id: string; name: string; provider: string; loginHost: string }> {
  const server = await findGitServerById(db, serverId);
  if (!server) throw new NotFoundError('GitSelfHostedServer', serverId);
  return { id: server.id, name: server.name, provider: server.provider, loginHost: new URL(oauthEndpoints(server).authorize).host };
}

/** The names of the servers a browser signed in through before (ids it kept), to offer them again; unknown ids are left out. */
export async function signInChoices(db: Db, serverIds: string[]): Promise<{ id: string; name: string; provider: string }[]> {
  const rows = await findGitServerNames(db, serverIds);
  return serverIds.flatMap((id) => rows.filter((r) => r.id === id));
}

/** identityPurposeOf: which identity flow a callback's state belongs to, or undefined for any other state (or one that does not open). */
export function identityPurposeOf(secrets: SecretBox, sealed: string | undefined): IdentityPurpose | undefined {
  try {
    // Read whatever its expiry: an expired identity state must reach its own return leg, which says so.
    return openFlowState(secrets, sealed, 'IDENTITY', 0).purpose;
  } catch {
    return undefined;
  }
}

/** The most of a user API's answer read. */
const MAX_USER_ANSWER_BYTES = 256 * 1024;

export interface GitAccount {
  /** The server's stable id of the account. */
  subject: string;
  login: string;
}

const text = (value: unknown) => (typeof value === 'string' && value.length > 0 ? value : typeof value === 'number' ? String(value) : undefined);

/**
 * accountOf reads who an answer of a user API names: GitHub, GitLab and Gitea by `id`, Bitbucket by
 * `uuid`, and any other server by OpenID Connect's `sub` (each only by its own: a field of another
 * provider's name may be one its users can set).
 */
export function accountOf(provider: GitServerRow['provider'], answer: Record<string, unknown>): GitAccount | undefined {
  const subject = provider === 'BITBUCKET' ? text(answer.uuid) : provider === 'GENERIC' ? text(answer.sub) : text(answer.id);
  if (!subject || subject.length > 255) return undefined;
  const login = text(answer.login) ?? text(answer.username) ?? text(answer.preferred_username) ?? text(answer.nickname) ?? text(answer.email) ?? subject;
  return { subject, login: login.slice(0, 255) };
}

async function fetchAccount(git: GitConfig, server: GitServerRow, accessToken: string): Promise<GitAccount> {
  let res: OutboundResponse;
  try {
    res = await outboundRequest(
      requireUserInfoUrl(server),
      {
        headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json', 'user-agent': 'plinth' },
        timeoutMs: git.httpTimeoutMs,
        maxBytes: MAX_USER_ANSWER_BYTES,
      },
      git.outbound,
    );
  } catch (error) {
    if (error instanceof EgressDeniedError) throw notAllowedError('Git:OAuth:NOT_ALLOWED', "The Git server's user API", error);
    throw new AppError(502, 'Git:OAuth:UNREACHABLE', "The Git server's user API cannot be reached");
  }
  const json = res.status === 200 ? jsonObject(res.body) : undefined;
  const account = json && accountOf(server.provider, json);
  if (!account) throw new AppError(502, 'Git:OAuth:BAD_RESPONSE', `The Git server's user API did not say whose the token is (it answered ${res.status})`);
  return account;
}

/** The account a return leg names, once its state, its browser and its code have been checked. */
async function accountOfCallback(
  db: Db,
  secrets: SecretBox,
  config: Config,
  purpose: IdentityPurpose,
  query: CallbackQuery,
  cookies: Record<string, string | undefined>,
): Promise<{ state: FlowState; server: GitServerRow; account: GitAccount }> {
  const state = openFlowState(secrets, query.state, 'IDENTITY');
  if (state.purpose !== purpose || !state.verifier) throw stateError('INVALID', 'The state was issued for another flow');
  assertSameBrowser(state.binding, cookies, state.nonce);
  if (query.error) throw new BadRequestError(`The Git server did not authorize: ${query.error}`, [], 'Git:OAuth:DENIED');
  if (!query.code) throw new BadRequestError('The callback carries no code', ['code: missing'], 'Git:OAuth:DENIED');
  const server = await findGitServer(db, state.organizationId, state.serverId ?? '');
  if (!server) throw new NotFoundError('GitSelfHostedServer', state.serverId ?? '');
  const tokens = await postToken(config.git, server, secrets, {
    grant_type: 'authorization_code',
    code: query.code,
    redirect_uri: callbackUrl(config),
    code_verifier: state.verifier,
  });
  return { state, server, account: await fetchAccount(config.git, server, tokens.accessToken) };
}

/**
 * completeIdentityLink (the OAuth callback of a link) links the account to the user who started it,
 * replacing their earlier link to that server. An account linked to another user already is a 409:
 * it must be unlinked by that user first.
 */
export async function completeIdentityLink(
  db: Db,
  secrets: SecretBox,
  config: Config,
  query: CallbackQuery,
  cookies: Record<string, string | undefined>,
): Promise<string> {
  const { state, server, account } = await accountOfCallback(db, secrets, config, 'LINK', query, cookies);
  // Two users linking one account at once: the second meets the unique index, and is told it is taken.
  const link = { id: newId(), userId: state.userId ?? '', serverId: server.id, ...account };
  const linked = await db
    .transaction()
    .execute((trx) => linkIdentity(trx, link))
    .catch((error) => {
      if (isUniqueViolation(error)) return undefined;
      throw error;
    });
  if (!linked) {
    throw new AppError(409, 'Git:Identity:TAKEN', `The account ${account.login} on ${server.name} is linked to another Plinth user: they must unlink it first`);
  }
  return state.returnTo;
}

/** Who a Git sign-in signs in: the linked user, in the organization of the server they signed in through. */
export interface GitSignIn {
  userId: string;
  /** The link that named the user. */
  identityId: string;
  organizationId: string;
  serverId: string;
  serverName: string;
  login: string;
  returnTo: string;
}

/**
 * completeIdentitySignIn (the console's sign-in return leg) names the Plinth user linked to the account
 * that logged in; an account nobody linked signs in no one (403).
 */
export async function completeIdentitySignIn(
  db: Db,
  secrets: SecretBox,
  config: Config,
  query: CallbackQuery,
  cookies: Record<string, string | undefined>,
): Promise<GitSignIn> {
  const { state, server, account } = await accountOfCallback(db, secrets, config, 'SIGN_IN', query, cookies);
  const identity = await findIdentityBySubject(db, server.id, account.subject);
  if (!identity) {
    throw new ForbiddenError(
      `No Plinth user has linked the account ${account.login} on ${server.name}: sign in with an API key once, and link it from your account page`,
      'Git:Identity:NOT_LINKED',
    );
  }
  await updateIdentityLogin(db, identity.id, account.login);
  return {
    userId: identity.user_id,
    identityId: identity.id,
    organizationId: server.organization_id,
    serverId: server.id,
    serverName: server.name,
    login: account.login,
    returnTo: state.returnTo,
  };
}

function identityToApi(row: GitIdentityListRow): GitIdentity {
  return {
    id: row.id,
    gitSelfHostedServerId: row.git_server_id,
    serverName: row.server_name,
    provider: row.provider as GitIdentity['provider'],
    organizationId: row.organization_id,
    login: row.login,
    createdAt: row.created_at,
  };
}

/** The caller's own links (a service account has none; a key bound to its organization sees that organization's only). */
export async function listOwnIdentities(db: Db, principal: Principal, page: PageRequest) {
  if (principal.principalType !== 'MEMBERSHIP') return { items: [], meta: { limit: page.limit } };
  const onlyIn = principal.organizationOnly ? principal.organizationId : undefined;
  const { items, meta } = toPage(await findUserIdentitiesPage(db, principal.userId, page, onlyIn), page, (r) => r.id);
  return { items: items.map(identityToApi), meta };
}

export async function unlinkOwnIdentity(db: Db, principal: Principal, id: string): Promise<void> {
  const onlyIn = principal.organizationOnly ? principal.organizationId : undefined;
  if (principal.principalType !== 'MEMBERSHIP' || !(await deleteUserIdentity(db, principal.userId, id, onlyIn))) throw new NotFoundError('GitIdentity', id);
}
