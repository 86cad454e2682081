import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OAuth2Server } from 'oauth2-mock-server';
import { startTestApp, TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { EMPTY_ALLOW_LIST } from '../src/platform/outbound/address-policy.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';

describe('OAuth to self-hosted Git servers, and the Git app install', () => {
  let t: TestApp;
  let oauth: OAuth2Server;
  let git: GitServer;
  const grants: string[] = [];
  before(async () => {
    t = await startTestApp();
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

  const register = async (name: string) => {
    const res = await t.call('POST', '/git-self-hosted-servers', {
      body: { data: { name, provider: 'GITLAB', baseUrl: oauth.issuer.url!, authorizeUrl: `${oauth.issuer.url}/authorize`, tokenUrl: `${oauth.issuer.url}/token`, clientId: 'plinth-client', clientSecret: 'client-secret-value', scopes: 'read_repository' } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  };
  /** Logs in and lets the authorization server answer: the callback URL it redirects the browser to. */
  const authorize = async (serverId: string, query = '') => {
    const login = await t.call('GET', `/gitoauth/self-hosted/${serverId}/login${query}`);
    assert.equal(login.status, 302, JSON.stringify(login.body));
    const location = new URL(String(login.headers.location));
    const back = await fetch(location, { redirect: 'manual' });
    assert.equal(back.status, 302);
    const callback = new URL(back.headers.get('location')!);
    return { location, callback: `${callback.pathname}${callback.search}` };
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
    const done = await t.call('GET', callback, { token: null });
    assert.equal(done.status, 302, JSON.stringify(done.body));
    assert.equal(done.headers.location, `${t.app.config.publicUrl}/ui/settings`);
    assert.ok(grants.includes('authorization_code'));
    const row = await t.db.selectFrom('git_oauth_connections').selectAll().where('server_id', '=', server.id).executeTakeFirstOrThrow();
    const access = TEST_SECRETS.open(row.access_token_sealed, `git_oauth_connections.access_token:${row.id}`);
    assert.equal(access.split('.').length, 3);
    assert.ok(!row.access_token_sealed.includes(access));
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`)).body.data.connected, true);

    // The same callback again: the state was used.
    assertError(await t.call('GET', callback, { token: null }), 400, 'Git:State:USED');
  });

  it('a code source authenticated through the connection lists a private repository, refreshing an expired token first', async () => {
    const server = await register('gitlab-for-source');
    const { callback } = await authorize(server.id);
    assert.equal((await t.call('GET', callback, { token: null })).status, 302);
    const source = (await t.call('POST', '/code-sources', { body: { data: { name: 'oauth-src', url: git.repoUrl('private'), provider: 'GITLAB', authType: 'OAUTH', gitSelfHostedServerId: server.id } } })).body.data;
    const listed = await t.call('GET', `/code-source/${source.id}/branches`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.equal(listed.body.data.length, 3);
    assert.ok(git.requests.some((r) => r.endsWith(' oauth2')), 'GitLab OAuth tokens go as the oauth2 user');
    // The token runs out: the next use refreshes it with the refresh token first.
    await t.db.updateTable('git_oauth_connections').set({ expires_at: new Date(Date.now() - 1000) }).where('server_id', '=', server.id).execute();
    const refreshesBefore = grants.filter((g) => g === 'refresh_token').length;
    assert.equal((await t.call('GET', `/code-source/${source.id}/branches`)).status, 200);
    assert.ok(grants.filter((g) => g === 'refresh_token').length > refreshesBefore, 'the refresh grant was used');
    const row = await t.db.selectFrom('git_oauth_connections').selectAll().where('server_id', '=', server.id).executeTakeFirstOrThrow();
    assert.ok(row.expires_at!.getTime() > Date.now());
    // A refused refresh says to log in again, and stores nothing.
    await t.db.updateTable('git_oauth_connections').set({ expires_at: new Date(Date.now() - 1000) }).where('server_id', '=', server.id).execute();
    oauth.service.once('beforeResponse', (response: { statusCode: number; body: unknown }) => {
      response.statusCode = 400;
      response.body = { error: 'invalid_grant' };
    });
    assertError(await t.call('GET', `/code-source/${source.id}/branches`), 422, 'Git:OAuth:REFRESH_REFUSED');
    assert.ok((await t.db.selectFrom('git_oauth_connections').select('expires_at').where('server_id', '=', server.id).executeTakeFirstOrThrow()).expires_at!.getTime() < Date.now());
    // A server that deletes would now break the source: it is in use.
    assertError(await t.call('DELETE', `/git-self-hosted-servers/${server.id}`), 409, 'Api:GitSelfHostedServer:IN_USE');
  });

  it('a token endpoint on the host\'s loopback is refused with 422 unless the operator allows it, and receives nothing', async () => {
    const server = await register('gitlab-internal');
    const { callback } = await authorize(server.id);
    const saved = t.app.config.git.outbound;
    t.app.config.git.outbound = { allow: EMPTY_ALLOW_LIST };
    const before = grants.length;
    try {
      const refused = await t.call('GET', callback, { token: null });
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
    assertError(await t.call('GET', `/gitoauth/callback?code=${code}&state=${encodeURIComponent(tampered)}`, { token: null }), 400, 'Git:State:INVALID');
    assertError(await t.call('GET', `/gitoauth/callback?code=${code}`, { token: null }), 400, 'Git:State:INVALID');
    assertError(await t.call('GET', `/gitoauth/callback?code=${code}&state=not-a-state`, { token: null }), 400, 'Git:State:INVALID');
    // The authorization server says no: the state is spent, nothing is stored.
    assertError(await t.call('GET', `/gitoauth/callback?error=access_denied&state=${encodeURIComponent(state)}`, { token: null }), 400, 'Git:OAuth:DENIED');
    assertError(await t.call('GET', callback, { token: null }), 400, 'Git:State:USED');

    const second = await authorize(server.id);
    oauth.service.once('beforeResponse', (response: { statusCode: number; body: unknown }) => {
      response.statusCode = 400;
      response.body = { error: 'invalid_grant' };
    });
    assertError(await t.call('GET', second.callback, { token: null }), 400, 'Git:OAuth:GRANT_REFUSED');

    const saved = t.app.config.git.stateTtlSeconds;
    t.app.config.git.stateTtlSeconds = 1;
    try {
      const expiring = await authorize(server.id);
      await new Promise((r) => setTimeout(r, 1_200));
      assertError(await t.call('GET', expiring.callback, { token: null }), 400, 'Git:State:EXPIRED');
    } finally {
      t.app.config.git.stateTtlSeconds = saved;
    }
    assert.equal(await connections(), count);
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`)).body.data.connected, false);
  });

  it('self-hosted servers are listed, patched and deleted by ADMINs; the client secret is never returned', async () => {
    const server = await register('crud');
    assert.equal(server.tokenUrl, `${oauth.issuer.url}/token`);
    const derived = await t.call('PATCH', `/git-self-hosted-servers/${server.id}`, { body: { data: { authorizeUrl: null, tokenUrl: null, clientSecret: 'rotated-secret-value' } } });
    assert.equal(derived.status, 200, JSON.stringify(derived.body));
    assert.equal(derived.body.data.authorizeUrl, `${oauth.issuer.url}/oauth/authorize`, 'GitLab\'s endpoints derive from the base URL');
    const row = await t.db.selectFrom('git_self_hosted_servers').selectAll().where('id', '=', server.id).executeTakeFirstOrThrow();
    assert.equal(TEST_SECRETS.open(row.client_secret_sealed, `git_self_hosted_servers.client_secret:${server.id}`), 'rotated-secret-value');
    assert.ok(!JSON.stringify((await t.call('GET', '/git-self-hosted-servers')).body).includes('secret-value'));
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${server.id}`, { token: viewer.token })).status, 200);
    assertError(await t.call('PATCH', `/git-self-hosted-servers/${server.id}`, { token: viewer.token, body: { data: { name: 'x' } } }), 403);
    assert.equal((await t.call('DELETE', `/git-self-hosted-servers/${server.id}`)).status, 204);
    assertError(await t.call('GET', `/git-self-hosted-servers/${server.id}`), 404, 'Api:GitSelfHostedServer:NOT_FOUND');
  });

  it('login is for ADMINs of the server\'s organization, and returns only to this service', async () => {
    const server = await register('gitlab-rules');
    const member = await serviceAccountCaller(t, 'MEMBER');
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/login`, { token: member.token }), 403);
    const other = await createOrganization(t, 'Other Git org');
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/login`, { headers: inOrg(other) }), 404);
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/login?returnTo=https://evil.example/steal`), 400);
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/login?returnTo=//evil.example/x`), 400);
  });

  it('the Git app install: not configured says how; configured redirects with a state whose return leg records the installation once', async () => {
    const unconfigured = await t.call('GET', '/gitapp/install');
    assertError(unconfigured, 422, 'Git:App:NOT_CONFIGURED');
    assert.match(unconfigured.body.description, /PLINTH_GITAPP_INSTALL_URL/);
    t.app.config.git.app = { installUrl: 'https://github.com/apps/plinth-test/installations/new', appId: undefined, privateKey: undefined, apiUrl: 'https://api.github.com' };
    try {
      const install = await t.call('GET', '/gitapp/install?returnTo=/ui/git');
      assert.equal(install.status, 302);
      const location = new URL(String(install.headers.location));
      assert.equal(`${location.origin}${location.pathname}`, 'https://github.com/apps/plinth-test/installations/new');
      const state = encodeURIComponent(location.searchParams.get('state')!);
      assertError(await t.call('GET', `/gitapp/callback?installation_id=42&state=forged`, { token: null }), 400, 'Git:State:INVALID');
      const back = await t.call('GET', `/gitapp/callback?installation_id=42&setup_action=install&state=${state}`, { token: null });
      assert.equal(back.status, 302, JSON.stringify(back.body));
      assert.equal(back.headers.location, `${t.app.config.publicUrl}/ui/git`);
      const installations = (await t.call('GET', '/git-app-installations')).body.data;
      assert.deepEqual(installations.map((i: any) => i.installationId), ['42']);
      assertError(await t.call('GET', `/gitapp/callback?installation_id=43&state=${state}`, { token: null }), 400, 'Git:State:USED');
      // Another organization's return leg cannot claim an installation already recorded here.
      const other = await createOrganization(t, 'App thief');
      const theirs = new URL(String((await t.call('GET', '/gitapp/install', { headers: inOrg(other) })).headers.location));
      const stolen = await t.call('GET', `/gitapp/callback?installation_id=42&state=${encodeURIComponent(theirs.searchParams.get('state')!)}`, { token: null });
      assertError(stolen, 409, 'Api:GitAppInstallation:TAKEN');
      assert.deepEqual((await t.call('GET', '/git-app-installations', { headers: inOrg(other) })).body.data, []);
      const source = await t.call('POST', '/code-sources', { body: { data: { name: 'app', url: 'https://github.com/acme/infra.git', provider: 'GITHUB', authType: 'APP_INSTALLATION', gitAppInstallationId: installations[0].id } } });
      assert.equal(source.status, 201, JSON.stringify(source.body));
      // Without the app's id and key no installation token can be minted: the listing says how to configure it.
      assertError(await t.call('GET', `/code-source/${source.body.data.id}/branches`), 422, 'Git:App:NOT_CONFIGURED');
    } finally {
      t.app.config.git.app = undefined;
    }
  });
});
