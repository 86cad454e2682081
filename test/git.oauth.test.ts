import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { OAuth2Server } from 'oauth2-mock-server';
import { startTestApp, TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { EMPTY_ALLOW_LIST } from '../src/platform/outbound/address-policy.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';

/**
 * A stand-in for GitHub's side of an app install with user authorization: its OAuth token endpoint
 * (a code per account) and `GET /user/installations` (what each account can access).
 */
async function startGitHubStandIn(accounts: Record<string, { code: string; installations: number[] }>) {
  const byToken = new Map(Object.entries(accounts).map(([name, a]) => [`token-${name}`, a.installations]));
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        const form = new URLSearchParams(body);
        const account = Object.entries(accounts).find(([, a]) => a.code === form.get('code'));
        const clientOk = form.get('client_id') === 'app-client' && form.get('client_secret') === 'app-secret';
        return res.end(
          JSON.stringify(account && clientOk ? { access_token: `token-${account[0]}`, token_type: 'bearer' } : { error: 'bad_verification_code' }),
        );
      }
      if (req.method === 'GET' && url.pathname === '/user/installations') {
        const installations = byToken.get(String(req.headers.authorization).replace(/^Bearer /, ''));
        if (!installations) return res.writeHead(401).end('{}');
        return res.end(JSON.stringify({ total_count: installations.length, installations: installations.map((id) => ({ id })) }));
      }
      res.writeHead(404).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

describe('OAuth to self-hosted Git servers, and the Git app install', () => {
  let t: TestApp;
  let oauth: OAuth2Server;
  let git: GitServer;
  const grants: string[] = [];
  /** The browser's cookies: the flows' binding cookies come and go with its requests. */
  const jar = new Map<string, string>();
  const browser = async (url: string, options: { token?: string | null; headers?: Record<string, string> } = {}) => {
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await t.call('GET', url, { ...options, headers: { ...(options.headers ?? {}), ...(cookie ? { cookie } : {}) } });
    const set = res.headers['set-cookie'];
    for (const line of Array.isArray(set) ? set : set ? [String(set)] : []) {
      const [pair] = line.split(';');
      const [name, value] = pair!.split('=') as [string, string];
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  };
  before(async () => {
    // Fewer database connections than the branch listings one organization may have under way (8).
    t = await startTestApp({ poolSize: 6 });
    oauth = new OAuth2Server();
    await oauth.issuer.keys.generate('RS256');
    await oauth.start(0, '127.0.0.1');
    oauth.service.on('beforeTokenSigning', (_token: unknown, req: { body?: { grant_type?: string } }) => grants.push(String(req.body?.grant_type)));
    git = await startGitServer();
    // The Git server takes the OAuth server's unexpired access tokens, as a GitLab or Gitea would its own.
    git.acceptToken = (token) => {
      try {
        const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
        return claims.iss === oauth.issuer.url && claims.exp * 1000 > Date.now();
      } catch {
        return false;
      }
    };
  });
  after(async () => {
    await oauth.stop();
    await git.close();
    await t.close();
  });

  const register = async (name: string, tokenUrl = `${oauth.issuer.url}/token`) => {
    const res = await t.call('POST', '/git-self-hosted-servers', {
      body: {
        data: {
          name,
          provider: 'GITLAB',
          baseUrl: oauth.issuer.url!,
          authorizeUrl: `${oauth.issuer.url}/authorize`,
          tokenUrl,
          clientId: 'plinth-client',
          clientSecret: 'client-secret-value',
          scopes: 'read_repository',
        },
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  };
  /** Logs in and lets the authorization server answer: the callback URL it redirects the browser to. */
  const authorize = async (serverId: string, query = '') => {
    const login = await browser(`/gitoauth/self-hosted/${serverId}/login${query}`);
    assert.equal(login.status, 302, JSON.stringify(login.body));
    const location = new URL(String(login.headers.location));
    const back = await fetch(location, { redirect: 'manual' });
    assert.equal(back.status, 302);
    const callback = new URL(back.headers.get('location')!);
    return { location, callback: `${callback.pathname}${callback.search}` };
  };
  /** A server connected through the login flow, and a code source of a private repository authenticated through it. */
  const connectedSource = async (name: string, tokenUrl?: string) => {
    const server = await register(`gitlab-${name}`, tokenUrl);
    const { callback } = await authorize(server.id);
    assert.equal((await browser(callback, { token: null })).status, 302);
    const created = await t.call('POST', '/code-sources', {
      body: { data: { name: `${name}-src`, url: git.repoUrl('private'), provider: 'GITLAB', authType: 'OAUTH', gitSelfHostedServerId: server.id } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return { server, source: created.body.data };
  };
  const connections = async () => (await t.db.selectFrom('git_oauth_connections').selectAll().execute()).length;

  it('the login redirects with a sealed state and PKCE; the callback exchanges the code, stores the tokens sealed and returns to the original URL', async () => {
    const server = await register('gitlab');
    assert.equal(server.connected, false);
    assert.ok(!JSON.stringify(server).includes('client-secret-value'));
    const { location, callback } = await authorize(server.id, '?returnTo=/ui/settings');
    assert.equal(location.origin + location.pathname, `${oauth.issuer.url}/authorize`);
    assert.equal(location.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(location.searchParams.get('client_id'), 'plinth-client');
    assert.equal(location.searchParams.get('redirect_uri'), `${t.app.config.publicUrl}/gitoauth/callback`);
    assert.ok(!location.searchParams.get('state')!.includes(server.id), 'the state is sealed, not readable');
    const done = await browser(callback, { token: null });
    assert.equal(done.status, 302, JSON.stringify(done.body));
    assert.equal(done.headers.location, `${t.app.config.publicUrl}/ui/settings`);
    assert.ok(grants.includes('authorization_code'));
    const row = await t.db.selectFrom('git_oauth_connections').selectAll().where('server_id', '=', server.id).executeTakeFirstOrThrow();
    const access = TEST_SECRETS.open(row.access_token_sealed, `git_oauth_connections.access_token:${row.id}`);
    assert.equal(access.split('.').length, 3);
    assert.ok(!row.access_token_sealed.includes(access));
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`)).body.data.connected, true);

    // The same callback again: the state was used.
    assertError(await browser(callback, { token: null }), 400, 'Git:State:USED');
  });

  it('a token endpoint that stalls a refresh holds no database connection: the API answers meanwhile, and the token is refreshed once', async () => {
    // The tenant's token endpoint, in front of the OAuth server: it answers a refresh only after a while.
    let refreshes = 0;
    const stalling = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', async () => {
        if (new URLSearchParams(body).get('grant_type') === 'refresh_token') {
          refreshes++;
          await new Promise((resolve) => setTimeout(resolve, 3_000));
        }
        const headers: Record<string, string> = { 'content-type': String(req.headers['content-type']) };
        if (req.headers.authorization) headers.authorization = req.headers.authorization;
        const answer = await fetch(`${oauth.issuer.url}/token`, { method: 'POST', headers, body });
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text());
      });
    });
    stalling.listen(0, '127.0.0.1');
    await once(stalling, 'listening');
    try {
      const { server, source } = await connectedSource('stalling', `http://127.0.0.1:${(stalling.address() as AddressInfo).port}/token`);
      await t.db
        .updateTable('git_oauth_connections')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('server_id', '=', server.id)
        .execute();
      // More uses at once than the API has database connections (6), by two callers within their bounds.
      const callers = [undefined, (await serviceAccountCaller(t, 'VIEWER')).token];
      const listings = callers.flatMap((token) => Array.from({ length: 4 }, () => t.call('GET', `/code-source/${source.id}/branches`, { token })));
      await new Promise((resolve) => setTimeout(resolve, 500));
      const startedAt = Date.now();
      assert.equal((await t.call('GET', '/projects')).status, 200);
      const waited = Date.now() - startedAt;
      assert.ok(waited < 1_500, `another request waited ${waited} ms for the stalled refresh`);
      assert.deepEqual([...new Set((await Promise.all(listings)).map((r) => r.status))], [200]);
      assert.equal(refreshes, 1, 'the token was refreshed once');
    } finally {
      stalling.close();
    }
  });

  it('a code source authenticated through the connection lists a private repository, refreshing an expired token first', async () => {
    const { server, source } = await connectedSource('for-source');
    const listed = await t.call('GET', `/code-source/${source.id}/branches`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.equal(listed.body.data.length, 3);
    assert.ok(
      git.requests.some((r) => r.endsWith(' oauth2')),
      'GitLab OAuth tokens go as the oauth2 user',
    );
    // The token runs out: the next use refreshes it with the refresh token first.
    await t.db
      .updateTable('git_oauth_connections')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('server_id', '=', server.id)
      .execute();
    const refreshesBefore = grants.filter((g) => g === 'refresh_token').length;
    assert.equal((await t.call('GET', `/code-source/${source.id}/branches`)).status, 200);
    assert.ok(grants.filter((g) => g === 'refresh_token').length > refreshesBefore, 'the refresh grant was used');
    const row = await t.db.selectFrom('git_oauth_connections').selectAll().where('server_id', '=', server.id).executeTakeFirstOrThrow();
    assert.ok(row.expires_at!.getTime() > Date.now());
    // A refused refresh says to log in again, and stores nothing.
    await t.db
      .updateTable('git_oauth_connections')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('server_id', '=', server.id)
      .execute();
    oauth.service.once('beforeResponse', (response: { statusCode: number; body: unknown }) => {
      response.statusCode = 400;
      response.body = { error: 'invalid_grant' };
    });
    assertError(await t.call('GET', `/code-source/${source.id}/branches`), 422, 'Git:OAuth:REFRESH_REFUSED');
    assert.ok(
      (await t.db.selectFrom('git_oauth_connections').select('expires_at').where('server_id', '=', server.id).executeTakeFirstOrThrow()).expires_at!.getTime() <
        Date.now(),
    );
    // A server that deletes would now break the source: it is in use.
    assertError(await t.call('DELETE', `/git-self-hosted-servers/${server.id}`), 409, 'Api:GitSelfHostedServer:IN_USE');
  });

  it("a token endpoint on the host's loopback is refused with 422 unless the operator allows it, and receives nothing", async () => {
    const server = await register('gitlab-internal');
    const { callback } = await authorize(server.id);
    const saved = t.app.config.git.outbound;
    t.app.config.git.outbound = { allow: EMPTY_ALLOW_LIST };
    const before = grants.length;
    try {
      const refused = await browser(callback, { token: null });
      assertError(refused, 422, 'Git:OAuth:NOT_ALLOWED');
      assert.match(refused.body.message, /PLINTH_STEP_EGRESS_ALLOW/);
    } finally {
      t.app.config.git.outbound = saved;
    }
    assert.equal(grants.length, before, 'the token endpoint got no request');
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`)).body.data.connected, false);
  });

  it('a bad, expired or reused state, a missing state or code, and a refused code are 400 and store nothing', async () => {
    const server = await register('gitlab-failures');
    const count = await connections();
    const { callback } = await authorize(server.id);
    const url = new URL(callback, 'http://x');
    const state = url.searchParams.get('state')!;
    const code = url.searchParams.get('code')!;
    const tampered = `${state.slice(0, -4)}${state.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    assertError(await browser(`/gitoauth/callback?code=${code}&state=${encodeURIComponent(tampered)}`, { token: null }), 400, 'Git:State:INVALID');
    assertError(await browser(`/gitoauth/callback?code=${code}`, { token: null }), 400, 'Git:State:INVALID');
    assertError(await browser(`/gitoauth/callback?code=${code}&state=not-a-state`, { token: null }), 400, 'Git:State:INVALID');
    // The authorization server says no: the state is spent, nothing is stored.
    assertError(await browser(`/gitoauth/callback?error=access_denied&state=${encodeURIComponent(state)}`, { token: null }), 400, 'Git:OAuth:DENIED');
    assertError(await browser(callback, { token: null }), 400, 'Git:State:USED');

    const second = await authorize(server.id);
    oauth.service.once('beforeResponse', (response: { statusCode: number; body: unknown }) => {
      response.statusCode = 400;
      response.body = { error: 'invalid_grant' };
    });
    assertError(await browser(second.callback, { token: null }), 400, 'Git:OAuth:GRANT_REFUSED');

    const saved = t.app.config.git.stateTtlSeconds;
    t.app.config.git.stateTtlSeconds = 1;
    try {
      const expiring = await authorize(server.id);
      await new Promise((r) => setTimeout(r, 1_200));
      assertError(await browser(expiring.callback, { token: null }), 400, 'Git:State:EXPIRED');
    } finally {
      t.app.config.git.stateTtlSeconds = saved;
    }
    assert.equal(await connections(), count);
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`)).body.data.connected, false);
  });

  it('self-hosted servers are listed, patched and deleted by ADMINs; the client secret is never returned', async () => {
    const server = await register('crud');
    assert.equal(server.tokenUrl, `${oauth.issuer.url}/token`);
    const derived = await t.call('PATCH', `/git-self-hosted-servers/${server.id}`, {
      body: { data: { authorizeUrl: null, tokenUrl: null, clientSecret: 'rotated-secret-value' } },
    });
    assert.equal(derived.status, 200, JSON.stringify(derived.body));
    assert.equal(derived.body.data.authorizeUrl, `${oauth.issuer.url}/oauth/authorize`, "GitLab's endpoints derive from the base URL");
    const row = await t.db.selectFrom('git_self_hosted_servers').selectAll().where('id', '=', server.id).executeTakeFirstOrThrow();
    assert.equal(TEST_SECRETS.open(row.client_secret_sealed, `git_self_hosted_servers.client_secret:${server.id}`), 'rotated-secret-value');
    assert.ok(!JSON.stringify((await t.call('GET', '/git-self-hosted-servers')).body).includes('secret-value'));
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`, { token: viewer.token })).status, 200);
    assertError(await t.call('PATCH', `/git-self-hosted-servers/${server.id}`, { token: viewer.token, body: { data: { name: 'x' } } }), 403);
    assert.equal((await t.call('DELETE', `/git-self-hosted-servers/${server.id}`)).status, 204);
    assertError(await t.call('GET', `/git-self-hosted-servers/${server.id}`), 404, 'Api:GitSelfHostedServer:NOT_FOUND');
  });

  it("login is for ADMINs of the server's organization, and returns only to this service", async () => {
    const server = await register('gitlab-rules');
    const member = await serviceAccountCaller(t, 'MEMBER');
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/login`, { token: member.token }), 403);
    const other = await createOrganization(t, 'Other Git org');
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/login`, { headers: inOrg(other) }), 404);
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/login?returnTo=https://evil.example/steal`), 400);
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/login?returnTo=//evil.example/x`), 400);
  });

  it('the Git app install: not configured says how; configured, the return leg records an installation its returning account can access, once, from the browser that started it', async () => {
    const unconfigured = await browser('/gitapp/install');
    assertError(unconfigured, 422, 'Git:App:NOT_CONFIGURED');
    assert.match(unconfigured.body.description, /PLINTH_GITAPP_INSTALL_URL/);
    const github = await startGitHubStandIn({ alice: { code: 'code-alice', installations: [42] }, mallory: { code: 'code-mallory', installations: [7] } });
    const app = {
      installUrl: `${github.url}/apps/plinth-test/installations/new`,
      appId: undefined,
      privateKey: undefined,
      apiUrl: github.url,
      clientId: 'app-client',
      clientSecret: 'app-secret',
    };
    t.app.config.git.app = app;
    const start = async (headers: Record<string, string> = {}) => {
      const install = await browser('/gitapp/install?returnTo=/ui/git', { headers });
      assert.equal(install.status, 302, JSON.stringify(install.body));
      const location = new URL(String(install.headers.location));
      assert.equal(`${location.origin}${location.pathname}`, `${github.url}/apps/plinth-test/installations/new`);
      return encodeURIComponent(location.searchParams.get('state')!);
    };
    try {
      const state = await start();
      assertError(await browser('/gitapp/callback?installation_id=42&code=code-alice&state=forged', { token: null }), 400, 'Git:State:INVALID');
      // The return leg in a browser that did not start the install (a link sent to a victim): refused, the state kept.
      const elsewhere = await t.call('GET', `/gitapp/callback?installation_id=42&code=code-alice&state=${state}`, { token: null });
      assertError(elsewhere, 400, 'Git:State:OTHER_BROWSER');
      const back = await browser(`/gitapp/callback?installation_id=42&setup_action=install&code=code-alice&state=${state}`, { token: null });
      assert.equal(back.status, 302, JSON.stringify(back.body));
      assert.equal(back.headers.location, `${t.app.config.publicUrl}/ui/git`);
      const installations = (await t.call('GET', '/git-app-installations')).body.data;
      assert.deepEqual(
        installations.map((i: any) => i.installationId),
        ['42'],
      );
      assertError(await browser(`/gitapp/callback?installation_id=43&code=code-alice&state=${state}`, { token: null }), 400, 'Git:State:USED');

      // Another organization names installation 42 (ids are sequential): its account cannot access it.
      const other = await createOrganization(t, 'App thief');
      const theirs = await start(inOrg(other));
      assertError(await browser(`/gitapp/callback?installation_id=42&code=code-mallory&state=${theirs}`, { token: null }), 403, 'Git:App:NOT_ACCESSIBLE');
      // Without a code (the app does not ask for user authorization), nothing can be verified.
      const uncoded = await start(inOrg(other));
      assertError(await browser(`/gitapp/callback?installation_id=7&state=${uncoded}`, { token: null }), 422, 'Git:App:UNVERIFIED');
      // An account that can access it, but the installation is this organization's already.
      const again = await start(inOrg(other));
      assertError(await browser(`/gitapp/callback?installation_id=42&code=code-alice&state=${again}`, { token: null }), 409, 'Api:GitAppInstallation:TAKEN');
      assert.deepEqual((await t.call('GET', '/git-app-installations', { headers: inOrg(other) })).body.data, []);

      // Without the app's OAuth client, no install is accepted.
      t.app.config.git.app = { ...app, clientId: undefined };
      const unverifiable = await start();
      const refused = await browser(`/gitapp/callback?installation_id=42&code=code-alice&state=${unverifiable}`, { token: null });
      assertError(refused, 422, 'Git:App:NOT_CONFIGURED');
      assert.match(refused.body.description, /Request user authorization/);

      const source = await t.call('POST', '/code-sources', {
        body: {
          data: {
            name: 'app',
            url: 'https://github.com/acme/infra.git',
            provider: 'GITHUB',
            authType: 'APP_INSTALLATION',
            gitAppInstallationId: installations[0].id,
          },
        },
      });
      assert.equal(source.status, 201, JSON.stringify(source.body));
      // Without the app's id and key no installation token can be minted: the listing says how to configure it.
      assertError(await t.call('GET', `/code-source/${source.body.data.id}/branches`), 422, 'Git:App:NOT_CONFIGURED');
    } finally {
      t.app.config.git.app = undefined;
      github.close();
    }
  });

  it('an OAuth return leg from a browser that did not start the login is refused, and the login still completes where it started', async () => {
    const server = await register('gitlab-csrf');
    const { callback } = await authorize(server.id);
    assertError(await t.call('GET', callback, { token: null }), 400, 'Git:State:OTHER_BROWSER');
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`)).body.data.connected, false);
    const done = await browser(callback, { token: null });
    assert.equal(done.status, 302, JSON.stringify(done.body));
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`)).body.data.connected, true);
  });
});
