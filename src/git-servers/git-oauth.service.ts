import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Principal } from '../platform/auth/principal.ts';
import type { Config } from '../platform/config.ts';
import type { Db } from '../platform/db/db.ts';
import { AppError, BadRequestError, NotFoundError } from '../platform/errors.ts';
import type { GitConfig } from '../platform/git-config.ts';
import { EgressDeniedError } from '../platform/outbound/address-policy.ts';
import { jsonObject, notAllowedError, outboundRequest, type OutboundResponse } from '../platform/outbound/http.ts';
import { newId } from '../platform/ids.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { assertSameBrowser, newFlowBinding, type FlowCookie } from './flow-binding.ts';
import { newNonce, openFlowState, safeReturnTo, sealFlowState, stateError } from './git-flow-state.ts';
import {
  consumeFlowState,
  findConnection,
  claimTokenRefresh,
  findGitServer,
  insertFlowState,
  releaseTokenRefresh,
  updateConnectionTokens,
  upsertConnection,
  type GitServerRow,
} from './git-servers.repo.ts';
import type { CallbackQuery } from './git-servers.schema.ts';

/** The OAuth endpoints of a server: as registered, else where its provider keeps them. */
export function oauthEndpoints(server: Pick<GitServerRow, 'base_url' | 'provider' | 'authorize_url' | 'token_url'>) {
  const base = server.base_url.replace(/\/+$/, '');
  const derived =
    server.provider === 'GITLAB'
      ? { authorize: `${base}/oauth/authorize`, token: `${base}/oauth/token` }
      : server.provider === 'BITBUCKET'
        ? { authorize: `${base}/site/oauth2/authorize`, token: `${base}/site/oauth2/access_token` }
        : { authorize: `${base}/login/oauth/authorize`, token: `${base}/login/oauth/access_token` };
  return { authorize: server.authorize_url ?? derived.authorize, token: server.token_url ?? derived.token };
}

export function callbackUrl(config: Config): string {
  return `${config.publicUrl.replace(/\/+$/, '')}/gitoauth/callback`;
}

/**
 * startOAuthLogin (`GET /gitoauth/self-hosted/{id}/login`) makes the authorization URL of a self-hosted server: a sealed, expiring,
 * single-use state carrying the caller, the server and where to return, and a PKCE S256 challenge
 * whose verifier stays in the database, sealed.
 */
export async function startOAuthLogin(
  db: Db,
  secrets: SecretBox,
  config: Config,
  principal: Principal,
  serverId: string,
  returnTo: string | undefined,
): Promise<{ location: string; cookie: FlowCookie }> {
  const server = await findGitServer(db, principal.organizationId, serverId);
  if (!server) throw new NotFoundError('GitSelfHostedServer', serverId);
  const target = safeReturnTo(returnTo, config.publicUrl);
  const nonce = newNonce();
  const verifier = randomBytes(32).toString('base64url');
  const expiresAt = Date.now() + config.git.stateTtlSeconds * 1000;
  await insertFlowState(db, {
    nonce,
    kind: 'OAUTH',
    organizationId: principal.organizationId,
    codeVerifierSealed: secrets.seal(verifier, `git_flow_states.code_verifier:${nonce}`),
    expiresAt: new Date(expiresAt),
  });
  const { cookie, hash } = newFlowBinding('OAUTH', nonce, config.git.stateTtlSeconds, config.publicUrl);
  const state = sealFlowState(secrets, {
    nonce,
    kind: 'OAUTH',
    organizationId: principal.organizationId,
    userId: principal.userId ?? null,
    serverId,
    returnTo: target,
    expiresAt,
    binding: hash,
  });
  return { location: authorizationUrl(config, server, state, verifier), cookie };
}

/** The server's authorization page for a code grant (RFC 6749 §4.1.1) with `state` and a PKCE S256 challenge of `verifier`. */
export function authorizationUrl(config: Config, server: GitServerRow, state: string, verifier: string): string {
  const url = new URL(oauthEndpoints(server).authorize);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', server.client_id);
  url.searchParams.set('redirect_uri', callbackUrl(config));
  if (server.scopes) url.searchParams.set('scope', server.scopes);
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
  url.searchParams.set('code_challenge_method', 'S256');
  return url.toString();
}

interface TokenAnswer {
  accessToken: string;
  refreshToken: string | null;
  expiresAt: Date | null;
}

/** A refused authorization code is the callback's 400; a refused refresh token is a 422 that says to log in again. */
const refusals = {
  authorization_code: () => new BadRequestError('The Git server refused the authorization code', [], 'Git:OAuth:GRANT_REFUSED'),
  refresh_token: () => new AppError(422, 'Git:OAuth:REFRESH_REFUSED', 'The Git server refused to refresh the OAuth token: an ADMIN must log in to it again'),
};

/** The most of a token endpoint's answer read. */
const MAX_TOKEN_ANSWER_BYTES = 64 * 1024;

/**
 * postToken calls a token endpoint (RFC 6749 §4.1.3, §6) through the outbound policy; a refusal is a
 * 4xx, a broken server 502, an endpoint at an address Plinth does not connect to 422.
 */
export async function postToken(
  git: GitConfig,
  server: GitServerRow,
  secrets: SecretBox,
  form: Record<string, string> & { grant_type: keyof typeof refusals },
): Promise<TokenAnswer> {
  const body = new URLSearchParams({
    ...form,
    client_id: server.client_id,
    client_secret: secrets.open(server.client_secret_sealed, `git_self_hosted_servers.client_secret:${server.id}`),
  });
  let res: OutboundResponse;
  try {
    res = await outboundRequest(
      oauthEndpoints(server).token,
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: body.toString(),
        timeoutMs: git.httpTimeoutMs,
        maxBytes: MAX_TOKEN_ANSWER_BYTES,
      },
      git.outbound,
    );
  } catch (error) {
    if (error instanceof EgressDeniedError) throw notAllowedError('Git:OAuth:NOT_ALLOWED', "The Git server's token endpoint", error);
    throw new AppError(502, 'Git:OAuth:UNREACHABLE', "The Git server's token endpoint cannot be reached");
  }
  const json = jsonObject(res.body);
  if ((res.status >= 400 && res.status < 500) || (json && typeof json.error === 'string')) throw refusals[form.grant_type]();
  if (res.status < 200 || res.status > 299 || !json || typeof json.access_token !== 'string' || json.access_token.length === 0) {
    throw new AppError(502, 'Git:OAuth:BAD_RESPONSE', "The Git server's token endpoint did not answer with a token");
  }
  const expiresIn = typeof json.expires_in === 'number' ? json.expires_in : Number(json.expires_in);
  return {
    accessToken: json.access_token,
    refreshToken: typeof json.refresh_token === 'string' ? json.refresh_token : null,
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(Date.now() + expiresIn * 1000) : null,
  };
}

/**
 * completeOAuthCallback (`GET /gitoauth/callback`, no credential) checks the state (sealed by this service, not expired,
 * never used), exchanges the code with the PKCE verifier, stores the tokens sealed, and returns where to
 * redirect. A bad, expired or reused state is a 400 and nothing is stored.
 */
export async function completeOAuthCallback(
  db: Db,
  secrets: SecretBox,
  config: Config,
  query: CallbackQuery,
  cookies: Record<string, string | undefined>,
): Promise<string> {
  const state = openFlowState(secrets, query.state, 'OAUTH');
  assertSameBrowser(state.binding, cookies, state.nonce);
  const row = await consumeFlowState(db, state.nonce, 'OAUTH');
  if (!row || row.organization_id !== state.organizationId) throw stateError('USED', 'The state was already used (or is unknown); start again');
  if (query.error) throw new BadRequestError(`The Git server did not authorize: ${query.error}`, [], 'Git:OAuth:DENIED');
  if (!query.code) throw new BadRequestError('The callback carries no code', ['code: missing'], 'Git:OAuth:DENIED');
  const server = await findGitServer(db, state.organizationId, state.serverId ?? '');
  if (!server) throw new NotFoundError('GitSelfHostedServer', state.serverId ?? '');
  const verifier = secrets.open(row.code_verifier_sealed ?? '', `git_flow_states.code_verifier:${row.nonce}`);
  const tokens = await postToken(config.git, server, secrets, {
    grant_type: 'authorization_code',
    code: query.code,
    redirect_uri: callbackUrl(config),
    code_verifier: verifier,
  });
  await db.transaction().execute((trx) =>
    upsertConnection(trx, {
      id: newId(),
      organizationId: state.organizationId,
      serverId: server.id,
      connectedById: state.userId,
      accessTokenSealed: (id) => secrets.seal(tokens.accessToken, `git_oauth_connections.access_token:${id}`),
      refreshTokenSealed: (id) => (tokens.refreshToken ? secrets.seal(tokens.refreshToken, `git_oauth_connections.refresh_token:${id}`) : null),
      expiresAt: tokens.expiresAt,
    }),
  );
  return state.returnTo;
}

/** Refresh a little before the expiry, so a token does not run out in the middle of a fetch. */
const REFRESH_MARGIN_MS = 60_000;

/** How often a use of a connection whose token another is refreshing looks for the new token. */
const REFRESH_WAIT_MS = 200;
/** A refresh claim outlasts the token call's own time limit by this much, then lapses for another to take. */
const REFRESH_CLAIM_SLACK_MS = 5_000;

/**
 * oauthAccessToken returns the organization's access token for a server, refreshed first when it
 * expired (or is about to). The refresh is an HTTP call to the server's token endpoint, which the
 * tenant runs and may stall: it is made outside any transaction, by the one use that claims it
 * (`refreshing_until`, for as long as the call may take), so that it holds no database connection and
 * no lock. The other uses wait for the new token without a connection, or claim the refresh once
 * the claim lapses: a token is refreshed once, and a stalling endpoint stalls only its own uses.
 */
export async function oauthAccessToken(
  db: Db,
  secrets: SecretBox,
  git: GitConfig,
  organizationId: string,
  serverId: string,
): Promise<{ token: string; server: GitServerRow }> {
  const server = await findGitServer(db, organizationId, serverId);
  for (;;) {
    const connection = await findConnection(db, organizationId, serverId);
    if (!server || !connection) {
      throw new AppError(422, 'Git:OAuth:NOT_CONNECTED', 'The organization has no OAuth connection to this Git server: GET its loginUrl first');
    }
    const expired = connection.expires_at !== null && connection.expires_at.getTime() - REFRESH_MARGIN_MS < Date.now();
    if (!expired) return { token: secrets.open(connection.access_token_sealed, `git_oauth_connections.access_token:${connection.id}`), server };
    if (!connection.refresh_token_sealed)
      throw new AppError(422, 'Git:OAuth:EXPIRED', 'The OAuth token expired and the server gave no refresh token: log in again');
    const claim = await claimTokenRefresh(db, connection.id, connection.refresh_token_sealed, git.httpTimeoutMs + REFRESH_CLAIM_SLACK_MS);
    if (claim)
      return { token: await refreshToken(db, secrets, git, server, { id: connection.id, claim, refreshSealed: connection.refresh_token_sealed }), server };
    await sleep(REFRESH_WAIT_MS);
  }
}

/** refreshToken trades the refresh token for new tokens and stores them, as the connection's claimed refresher. */
async function refreshToken(
  db: Db,
  secrets: SecretBox,
  git: GitConfig,
  server: GitServerRow,
  connection: { id: string; claim: Date; refreshSealed: string },
): Promise<string> {
  try {
    const refresh = secrets.open(connection.refreshSealed, `git_oauth_connections.refresh_token:${connection.id}`);
    const tokens = await postToken(git, server, secrets, { grant_type: 'refresh_token', refresh_token: refresh });
    // Not stored when a new login replaced the grant meanwhile; this use still has a token that works.
    await updateConnectionTokens(db, connection.id, connection.claim, {
      access_token_sealed: secrets.seal(tokens.accessToken, `git_oauth_connections.access_token:${connection.id}`),
      // A server that does not rotate refresh tokens keeps the old one valid.
      refresh_token_sealed: secrets.seal(tokens.refreshToken ?? refresh, `git_oauth_connections.refresh_token:${connection.id}`),
      expires_at: tokens.expiresAt,
    });
    return tokens.accessToken;
  } catch (error) {
    await releaseTokenRefresh(db, connection.id, connection.claim).catch(() => {});
    throw error;
  }
}
