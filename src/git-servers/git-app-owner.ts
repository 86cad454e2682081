import { AppError } from '../platform/errors.ts';
import type { GitAppConfig, GitConfig } from '../platform/git-config.ts';
import { EgressDeniedError } from '../platform/outbound/address-policy.ts';
import { jsonObject, notAllowedError, outboundRequest, type OutboundResponse } from '../platform/outbound/http.ts';

/** Pages of the user's installations read at most (100 each): an id past them is not found. */
const MAX_PAGES = 10;
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * assertUserSeesInstallation proves that the person who came back from the provider's installation page
 * may use `installationId`: the `installation_id` of the return leg comes from the browser, and
 * installation ids are sequential, so a tenant could otherwise name another company's installation and
 * read its private repositories. With the app's "Request user authorization (OAuth) during
 * installation" on, the provider sends a `code` with the return leg; it is exchanged for a
 * user-to-server token, and the installation must be among those that user can access (GitHub's
 * `GET /user/installations`).
 */
export async function assertUserSeesInstallation(git: GitConfig, app: GitAppConfig, code: string | undefined, installationId: string): Promise<void> {
  if (!app.clientId || !app.clientSecret) {
    throw new AppError(422, 'Git:App:NOT_CONFIGURED', 'Installations cannot be verified: PLINTH_GITAPP_CLIENT_ID and PLINTH_GITAPP_CLIENT_SECRET are not set', {
      description:
        'Set the app\'s client id and secret, turn on "Request user authorization (OAuth) during installation" and set its Callback URL to <PLINTH_PUBLIC_URL>/gitapp/callback (docs/git.md).',
    });
  }
  if (!code) {
    throw new AppError(422, 'Git:App:UNVERIFIED', 'The return leg carries no authorization code, so the installation cannot be verified', {
      description:
        'Turn on the app\'s "Request user authorization (OAuth) during installation", with its Callback URL set to <PLINTH_PUBLIC_URL>/gitapp/callback.',
    });
  }
  const token = await userToken(git, app, code);
  for (let page = 1; page <= MAX_PAGES; page++) {
    const ids = await installationsPage(git, app, token, page);
    if (ids.includes(installationId)) return;
    if (ids.length < 100) break;
  }
  throw new AppError(403, 'Git:App:NOT_ACCESSIBLE', 'The account that came back from the Git provider cannot access this installation of the app');
}

async function call(git: GitConfig, url: string, init: { method?: string; headers: Record<string, string>; body?: string }): Promise<OutboundResponse> {
  try {
    return await outboundRequest(url, { ...init, timeoutMs: git.httpTimeoutMs, maxBytes: MAX_ANSWER_BYTES }, git.outbound);
  } catch (error) {
    if (error instanceof EgressDeniedError) throw notAllowedError('Git:App:NOT_ALLOWED', 'The Git provider', error);
    throw new AppError(502, 'Git:App:UNREACHABLE', 'The Git provider cannot be reached to verify the installation');
  }
}

/** The provider's OAuth token endpoint lives beside its installation page (github.com, or a GitHub Enterprise host). */
async function userToken(git: GitConfig, app: GitAppConfig, code: string): Promise<string> {
  const url = `${new URL(app.installUrl).origin}/login/oauth/access_token`;
  const body = new URLSearchParams({ client_id: app.clientId!, client_secret: app.clientSecret!, code }).toString();
  const res = await call(git, url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'user-agent': 'plinth' },
    body,
  });
  const token = jsonObject(res.body)?.access_token;
  if (res.status !== 200 || typeof token !== 'string' || token === '')
    throw new AppError(400, 'Git:App:GRANT_REFUSED', 'The Git provider refused the authorization code of the installation');
  return token;
}

async function installationsPage(git: GitConfig, app: GitAppConfig, token: string, page: number): Promise<string[]> {
  const res = await call(git, `${app.apiUrl}/user/installations?per_page=100&page=${page}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'user-agent': 'plinth' },
  });
  const installations = jsonObject(res.body)?.installations;
  if (res.status !== 200 || !Array.isArray(installations))
    throw new AppError(502, 'Git:App:BAD_RESPONSE', `The Git provider did not list the user's installations (HTTP ${res.status})`);
  return installations.map((i: unknown) => String((i as { id?: unknown } | null)?.id));
}
