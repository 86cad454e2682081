import { createSign } from 'node:crypto';
import type { Principal } from '../platform/auth/principal.ts';
import type { Config } from '../platform/config.ts';
import type { Db } from '../platform/db/db.ts';
import type { GitAppConfig, GitConfig } from '../platform/git-config.ts';
import { EgressDeniedError } from '../platform/outbound/address-policy.ts';
import { jsonObject, notAllowedError, outboundRequest, type OutboundResponse } from '../platform/outbound/http.ts';
import { AppError, BadRequestError, ConflictError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { assertSameBrowser, newFlowBinding, type FlowCookie } from './flow-binding.ts';
import { assertUserSeesInstallation } from './git-app-owner.ts';
import { newNonce, openFlowState, safeReturnTo, sealFlowState, stateError } from './git-flow-state.ts';
import { consumeFlowState, findAppInstallationsPage, insertAppInstallation, insertFlowState, type GitAppInstallationRow } from './git-servers.repo.ts';
import type { AppCallbackQuery, GitAppInstallation } from './git-servers.schema.ts';

/** Not configured: a 4xx that says how to configure it. */
function notConfigured(): AppError {
  return new AppError(422, 'Git:App:NOT_CONFIGURED', 'No Git app is configured on this installation of Plinth', {
    description:
      "Set PLINTH_GITAPP_INSTALL_URL to the app's installation page (GitHub: https://github.com/apps/<app>/installations/new), PLINTH_GITAPP_CLIENT_ID and " +
      'PLINTH_GITAPP_CLIENT_SECRET to its OAuth client; turn on its "Request user authorization (OAuth) during installation" with the Callback URL ' +
      '<PLINTH_PUBLIC_URL>/gitapp/callback; to fetch with installations also set PLINTH_GITAPP_ID and PLINTH_GITAPP_PRIVATE_KEY (see README, docs/git.md).',
  });
}

/** startAppInstall (`GET /gitapp/install`) makes the app's installation URL with a sealed, expiring, single-use state. */
export async function startAppInstall(
  db: Db,
  secrets: SecretBox,
  config: Config,
  principal: Principal,
  returnTo: string | undefined,
): Promise<{ location: string; cookie: FlowCookie }> {
  const app = config.git.app;
  if (!app) throw notConfigured();
  const target = safeReturnTo(returnTo, config.publicUrl);
  const nonce = newNonce();
  const expiresAt = Date.now() + config.git.stateTtlSeconds * 1000;
  await insertFlowState(db, { nonce, kind: 'APP_INSTALL', organizationId: principal.organizationId, codeVerifierSealed: null, expiresAt: new Date(expiresAt) });
  const { cookie, hash } = newFlowBinding('APP_INSTALL', nonce, config.git.stateTtlSeconds, config.publicUrl);
  const url = new URL(app.installUrl);
  url.searchParams.set(
    'state',
    sealFlowState(secrets, {
      nonce,
      kind: 'APP_INSTALL',
      organizationId: principal.organizationId,
      userId: principal.userId ?? null,
      serverId: null,
      returnTo: target,
      expiresAt,
      binding: hash,
    }),
  );
  return { location: url.toString(), cookie };
}

/**
 * completeAppInstall is the return leg: from the browser that started the install, with a state of this
 * service, and an installation the returning provider account can access (git-app-owner.ts), the
 * installation is recorded for the state's organization.
 */
export async function completeAppInstall(
  db: Db,
  secrets: SecretBox,
  config: Config,
  query: AppCallbackQuery,
  cookies: Record<string, string | undefined>,
): Promise<string> {
  const app = config.git.app;
  if (!app) throw notConfigured();
  const state = openFlowState(secrets, query.state, 'APP_INSTALL');
  assertSameBrowser(state.binding, cookies, state.nonce);
  const row = await consumeFlowState(db, state.nonce, 'APP_INSTALL');
  if (!row || row.organization_id !== state.organizationId) throw stateError('USED', 'The state was already used (or is unknown); start again');
  if (!query.installation_id) throw new BadRequestError('The return leg carries no installation_id', ['installation_id: missing'], 'Git:App:NO_INSTALLATION');
  await assertUserSeesInstallation(config.git, app, query.code, query.installation_id);
  const recorded = await insertAppInstallation(db, {
    id: newId(),
    organizationId: state.organizationId,
    installationId: query.installation_id,
    installedById: state.userId,
  });
  if (recorded.organization_id !== state.organizationId) {
    throw new ConflictError('GitAppInstallation', 'TAKEN', 'This installation of the Git app belongs to another organization of this service');
  }
  return state.returnTo;
}

function installationToApi(row: GitAppInstallationRow): GitAppInstallation {
  return { id: row.id, organizationId: row.organization_id, installationId: row.installation_id, createdAt: row.created_at };
}

export async function listAppInstallations(db: Db, principal: Principal, page: PageRequest) {
  const { items, meta } = toPage(await findAppInstallationsPage(db, principal.organizationId, page), page, (r) => r.id);
  return { items: items.map(installationToApi), meta };
}

/** The app's own JWT (RS256, ten minutes at most), which GitHub exchanges for an installation token. */
function appJwt(app: GitAppConfig): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unsigned = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iat: now - 60, exp: now + 540, iss: app.appId })}`;
  return `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(app.privateKey!).toString('base64url')}`;
}

/** installationToken mints a short-lived token of an installation (GitHub's `POST /app/installations/{id}/access_tokens`). */
export async function installationToken(git: GitConfig, installationId: string): Promise<string> {
  const app = git.app;
  if (!app?.appId || !app.privateKey) throw notConfigured();
  let res: OutboundResponse;
  try {
    const url = `${app.apiUrl}/app/installations/${encodeURIComponent(installationId)}/access_tokens`;
    const headers = { authorization: `Bearer ${appJwt(app)}`, accept: 'application/vnd.github+json', 'user-agent': 'plinth' };
    res = await outboundRequest(url, { method: 'POST', headers, timeoutMs: git.httpTimeoutMs, maxBytes: 64 * 1024 }, git.outbound);
  } catch (error) {
    if (error instanceof EgressDeniedError) throw notAllowedError('Git:App:NOT_ALLOWED', "The Git app's API", error);
    throw new AppError(502, 'Git:App:UNREACHABLE', "The Git app's API cannot be reached");
  }
  const token = jsonObject(res.body)?.token;
  if (res.status < 200 || res.status > 299 || typeof token !== 'string')
    throw new AppError(422, 'Git:App:TOKEN_REFUSED', `The Git app's API refused an installation token (HTTP ${res.status})`);
  return token;
}
