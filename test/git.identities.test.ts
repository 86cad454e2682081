import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OAuth2Server } from 'oauth2-mock-server';
import type { Role } from '../src/platform/auth/roles.ts';
import { startTestApp, TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { assertError, serviceAccountCaller, userCaller, type UserCaller } from './helpers/callers.ts';
import { consoleBrowser } from './helpers/console.ts';

/**
 * Signing in to the console through a self-hosted Git server: a user links their account on it (an
 * OAuth login read through the server's user API), then that server's login signs them in. The OAuth
 * server is a real one on loopback, its userinfo endpoint standing in for the server's user API.
 */
describe('Git sign-in: linking an account on a Git server, and signing in to the console with it', () => {
  let t: TestApp;
  let oauth: OAuth2Server;
  let orgId: string;
  /** Whom the user API says the next token belongs to. */
  let account: Record<string, unknown> = { id: 1001, username: 'ada' };

  /** A browser: its cookies come and go with its requests, by path as a browser keeps them. */
  const newBrowser = () => {
    const jar = new Map<string, { value: string; path: string }>();
    const cookiesFor = (url: string) => {
      const path = new URL(url, 'http://x').pathname;
      return [...jar]
        .filter(([, c]) => path.startsWith(c.path))
        .map(([name, c]) => `${name}=${c.value}`)
        .join('; ');
    };
    const send = async (method: 'GET' | 'POST', url: string, token: string | null = null, form?: Record<string, string>) => {
      const cookie = cookiesFor(url);
      const raw = await t.app.inject({
        method,
        url,
        headers: {
          ...(cookie ? { cookie } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        ...(form ? { payload: new URLSearchParams(form).toString() } : {}),
      });
      const json = String(raw.headers['content-type'] ?? '').startsWith('application/json');
      const res = { status: raw.statusCode, headers: raw.headers as Record<string, unknown>, body: json ? raw.json() : raw.body };
      const set = res.headers['set-cookie'];
      for (const line of Array.isArray(set) ? set : set ? [String(set)] : []) {
        const [pair, ...attributes] = line.split(';');
        const [name, value] = pair!.split('=') as [string, string];
        const path = attributes.map((a: string) => /^\s*path=(.*)$/i.exec(a)?.[1]).find(Boolean) ?? '/';
        if (/max-age=0|expires=thu, 01 jan 1970/i.test(line)) jar.delete(name);
        else jar.set(name, { value, path });
      }
      return res;
    };
    const get = (url: string, token: string | null = null) => send('GET', url, token);
    const post = (url: string, form: Record<string, string>) => send('POST', url, null, form);
    return { get, post, jar, cookieHeader: () => [...jar].map(([name, c]) => `${name}=${c.value}`).join('; ') };
  };
  type Browser = ReturnType<typeof newBrowser>;

  /** Follows a redirect to the OAuth server, which logs the account in and sends the browser back: the path it sends it to. */
  const throughOAuthServer = async (location: string) => {
    const back = await fetch(location, { redirect: 'manual' });
    assert.equal(back.status, 302);
    const url = new URL(back.headers.get('location')!);
    return `${url.pathname}${url.search}`;
  };

  const register = async (name: string, extra: Record<string, unknown> = {}) => {
    const res = await t.call('POST', '/git-self-hosted-servers', {
      body: {
        data: {
          name,
          provider: 'GITLAB',
          baseUrl: oauth.issuer.url!,
          authorizeUrl: `${oauth.issuer.url}/authorize`,
          tokenUrl: `${oauth.issuer.url}/token`,
          userUrl: `${oauth.issuer.url}/userinfo`,
          clientId: 'plinth-client',
          clientSecret: 'client-secret-value',
          scopes: 'read_user',
          ...extra,
        },
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  };

  /** `who` links the account the user API names now, from the browser `browser`. */
  const link = async (browser: Browser, who: { token: string }, serverId: string) => {
    const start = await browser.get(`/gitoauth/self-hosted/${serverId}/link?returnTo=${encodeURIComponent(`/account/linked?org=${orgId}`)}`, who.token);
    assert.equal(start.status, 302, JSON.stringify(start.body));
    return browser.get(await throughOAuthServer(String(start.headers.location)));
  };

  /** A page that sends the browser on to the Git server (a meta refresh), as a redirect would: where it goes, in `location`. */
  const leftFor = (res: { status: number; headers: Record<string, unknown>; body: unknown }) => {
    const to = /<meta http-equiv="refresh" content="0;url=([^"]+)"/.exec(String(res.body))?.[1]?.replaceAll('&amp;', '&');
    return { ...res, headers: { ...res.headers, location: to } };
  };

  /** The sign-in link's page, then its button: the POST that starts a sign-in. */
  const startSignIn = async (browser: Browser, serverId: string) => {
    const page = await browser.get(`/sign-in/git/${serverId}`);
    assert.equal(page.status, 200, String(page.body));
    const token = /name="_signin" value="([^"]+)"/.exec(String(page.body))![1]!;
    return leftFor(await browser.post(`/sign-in/git/${serverId}`, { _signin: token }));
  };

  /** Signs in through the server as a browser does: the sign-in link, the OAuth server, the callback, its hand-over to the console. */
  const signIn = async (browser: Browser, serverId: string) => {
    const start = await startSignIn(browser, serverId);
    assert.equal(start.status, 200, String(start.body));
    const callback = await browser.get(await throughOAuthServer(String(start.headers.location)));
    assert.equal(callback.status, 302, JSON.stringify(callback.body));
    const handedOn = new URL(String(callback.headers.location));
    assert.equal(handedOn.pathname, '/sign-in/git/callback');
    return browser.get(`${handedOn.pathname}${handedOn.search}`);
  };

  /** A member of the organization who has linked `who`, the account the user API names, to the server. */
  const linkedMember = async (email: string, role: Role, who: Record<string, unknown>) => {
    account = who;
    const member = await userCaller(t, email, role);
    assert.equal((await link(newBrowser(), member, server.id)).status, 302);
    return member;
  };

  let ada: UserCaller;
  let server: { id: string; name: string; userUrl: string; signInUrl: string; linkUrl: string };

  before(async () => {
    t = await startTestApp();
    oauth = new OAuth2Server();
    await oauth.issuer.keys.generate('RS256');
    await oauth.start(0, '127.0.0.1');
    oauth.service.on('beforeUserinfo', (response: { body: unknown }) => {
      response.body = account;
    });
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    ada = await userCaller(t, 'ada@example.com', 'VIEWER');
    server = await register('gitlab');
  });
  after(async () => {
    await oauth?.stop();
    await t?.close();
  });

  it('says where it reads accounts and where its users sign in, and refuses a link where it knows no user API', async () => {
    assert.equal(server.userUrl, `${oauth.issuer.url}/userinfo`);
    assert.equal(server.signInUrl, `${t.app.config.publicUrl}/sign-in/git/${server.id}`);
    assert.equal(server.linkUrl, `${t.app.config.publicUrl}/gitoauth/self-hosted/${server.id}/link`);
    const generic = await register('generic', { provider: 'GENERIC', userUrl: undefined });
    assert.equal(generic.userUrl, null);
    assertError(await t.call('GET', `/gitoauth/self-hosted/${generic.id}/link`, { token: ada.token }), 422, 'Git:Identity:NO_USER_API');
    const gitea = await register('gitea', { provider: 'GITEA', baseUrl: 'https://gitea.example.com/', userUrl: undefined });
    assert.equal(gitea.userUrl, 'https://gitea.example.com/api/v1/user');
  });

  it("links a user's account (a VIEWER's too), lists it as theirs and as their identity provider, and lets them unlink it", async () => {
    account = { id: 1001, username: 'ada' };
    const browser = newBrowser();
    const done = await link(browser, ada, server.id);
    assert.equal(done.status, 302, JSON.stringify(done.body));
    assert.equal(done.headers.location, `${t.app.config.publicUrl}/account/linked?org=${orgId}`);
    const mine = await t.call('GET', '/git-identities', { token: ada.token });
    assert.equal(mine.status, 200);
    assert.deepEqual(
      mine.body.data.map((i: Record<string, unknown>) => [i.gitSelfHostedServerId, i.serverName, i.provider, i.login, i.organizationId]),
      [[server.id, 'gitlab', 'GITLAB', 'ada', orgId]],
    );
    assert.deepEqual((await t.call('GET', `/users/${ada.userId}/identities`, { token: ada.token })).body.data.identityProviders, ['gitlab:gitlab']);
    // Nobody else sees it as theirs.
    assert.deepEqual((await t.call('GET', '/git-identities')).body.data, []);
    assertError(await t.call('DELETE', `/git-identities/${mine.body.data[0].id}`), 404, 'Api:GitIdentity:NOT_FOUND');

    // The same callback again: the OAuth server takes a code once.
    const other = newBrowser();
    const again = await link(other, ada, server.id);
    assert.equal(again.status, 302, 'a second login links again, replacing the first');
    assert.equal((await t.call('GET', '/git-identities', { token: ada.token })).body.data.length, 1);

    assert.equal((await t.call('DELETE', `/git-identities/${mine.body.data[0].id}`, { token: ada.token })).status, 204);
    assert.deepEqual((await t.call('GET', '/git-identities', { token: ada.token })).body.data, []);
  });

  it('refuses to link an account another user has linked, a service account, and a return leg in another browser', async () => {
    await linkedMember('hedy@example.com', 'MEMBER', { id: 2002, username: 'hedy' });
    const mallory = await userCaller(t, 'mallory@example.com', 'MEMBER');
    assertError(await link(newBrowser(), mallory, server.id), 409, 'Git:Identity:TAKEN');
    assert.deepEqual((await t.call('GET', '/git-identities', { token: mallory.token })).body.data, []);

    const robot = await serviceAccountCaller(t, 'ADMIN');
    assertError(await t.call('GET', `/gitoauth/self-hosted/${server.id}/link`, { token: robot.token }), 403, 'Auth:Principal:NOT_A_USER');

    // The victim's browser is sent the attacker's return leg: it holds no binding cookie for it.
    const attacker = newBrowser();
    const start = await attacker.get(`/gitoauth/self-hosted/${server.id}/link`, mallory.token);
    const callback = await throughOAuthServer(String(start.headers.location));
    assertError(await newBrowser().get(callback), 400, 'Git:State:OTHER_BROWSER');
  });

  it('signs a linked user in to the console with a key minted for the session, audited, which signing out revokes', async () => {
    const linus = await linkedMember('linus@example.com', 'MEMBER', { id: 3003, username: 'linus' });

    const browser = newBrowser();
    const start = await startSignIn(browser, server.id);
    const authorize = new URL(String(start.headers.location));
    assert.equal(authorize.searchParams.get('redirect_uri'), `${t.app.config.publicUrl}/gitoauth/callback`);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    const binding = [...browser.jar].find(([name]) => name.startsWith('plinth_flow_'))!;
    assert.equal(binding[1].path, '/sign-in/git/callback', 'the binding cookie goes to the console only');

    const signedIn = await signIn(browser, server.id);
    assert.equal(signedIn.status, 200, String(signedIn.body));
    assert.match(String(signedIn.body), /<meta http-equiv="refresh" content="0;url=\/orgs\/[^"]+\/runs"/);
    assert.ok(browser.jar.has('plinth_session'));
    const inbox = await browser.get(`/orgs/${orgId}/runs`);
    assert.equal(inbox.status, 200);
    assert.match(String(inbox.body), /linus@example\.com/);

    const keys = (await t.call('GET', '/api-keys', { token: linus.token })).body.data;
    const minted = keys.find((k: { name: string }) => k.name === 'Console sign-in through gitlab');
    assert.ok(minted, JSON.stringify(keys));
    assert.ok(minted.expiresAt, 'the key expires with the session');
    const audit = (await t.call('GET', '/audit-events?action=console.sign-in')).body.data;
    const entry = audit.find((e: { actorId: string }) => e.actorId === linus.userId);
    assert.ok(entry, JSON.stringify(audit));
    assert.equal(entry.apiKeyId, minted.id);

    // The session reaches none of the user's other organizations: the server vouches for one only.
    const elsewhere = await t.call('POST', '/organizations', {
      token: linus.token,
      body: { data: { name: 'linus-own-org', billingEmail: 'linus@example.com' } },
    });
    assert.equal(elsewhere.status, 201, JSON.stringify(elsewhere.body));
    assert.equal((await browser.get(`/orgs/${elsewhere.body.data.id}/runs`)).status, 403);
    const orgPage = String((await browser.get(`/orgs/${orgId}/organization`)).body);
    assert.ok(!orgPage.includes('linus-own-org'), 'the organization list holds only the one it signed in to');
    // So does the key it acts with, through the API, and any key made with it.
    const session = await t.db.selectFrom('console_sessions').selectAll().where('principal_id', '=', linus.userId).executeTakeFirstOrThrow();
    const mintedToken = TEST_SECRETS.open(session.sealed_key, `console-session:${session.token_hash}`);
    const other = { 'x-organization-id': elsewhere.body.data.id };
    assertError(await t.call('GET', '/auth/whoami', { token: mintedToken, headers: other }), 403, 'Auth:Organization:FORBIDDEN');
    const made = await t.call('POST', '/api-keys', { token: mintedToken, body: { data: { name: 'made in a git session' } } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assertError(await t.call('GET', '/auth/whoami', { token: made.body.data.token, headers: other }), 403, 'Auth:Organization:FORBIDDEN');
    assert.equal((await t.call('GET', '/auth/whoami', { token: linus.token, headers: other })).status, 200, "the user's own key still reaches both");
    // It revokes only keys bound like it: the user's own key reaches further than it does.
    const firstKey = (await t.call('GET', '/auth/whoami', { token: linus.token })).body.data.identityId;
    assertError(await t.call('DELETE', `/api-keys/${firstKey}`, { token: mintedToken }), 403);
    assert.equal((await t.call('DELETE', `/api-keys/${made.body.data.id}`, { token: mintedToken })).status, 204);

    // The sign-in page of this browser offers the server again.
    assert.match(String((await browser.get('/sign-in')).body), new RegExp(`action="/sign-in/git/${server.id}"`));

    // Signing out everywhere from it ends the Git sign-ins' sessions only, and deletes their keys.
    const pasted = await consoleBrowser(() => t.app).signIn(linus.token);
    assert.ok(pasted.cookie);
    const page = await browser.get(`/orgs/${orgId}/account`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(String(page.body))![1]!;
    const out = await browser.post('/sign-out', { _csrf: csrf, everywhere: 'yes' });
    assert.equal(out.status, 303);
    assert.equal((await t.app.inject({ url: `/orgs/${orgId}/runs`, headers: { cookie: pasted.cookie! } })).statusCode, 200, "the pasted key's session goes on");
    const keysAfter = (await t.call('GET', '/api-keys', { token: linus.token })).body.data as { id: string }[];
    assert.ok(!keysAfter.some((k) => k.id === minted.id), 'signing out deleted the minted key');
    assert.ok((await t.call('GET', '/audit-events?action=console.sign-out')).body.data.some((e: { actorId: string }) => e.actorId === linus.userId));
  });

  it("signs an OWNER in as an ADMIN at most, and drops a server's links when what vouches for its accounts changes", async () => {
    const olga = await linkedMember('olga@example.com', 'OWNER', { id: 8008, username: 'owner-olga' });
    const browser = newBrowser();
    assert.equal((await signIn(browser, server.id)).status, 200);
    assert.match(String((await browser.get(`/orgs/${orgId}/runs`)).body), /olga@example\.com[\s\S]*· admin/);
    const session = await t.db.selectFrom('console_sessions').selectAll().where('principal_id', '=', olga.userId).executeTakeFirstOrThrow();
    const mintedToken = TEST_SECRETS.open(session.sealed_key, `console-session:${session.token_hash}`);
    assert.equal((await t.call('GET', '/auth/whoami', { token: mintedToken })).body.data.role, 'ADMIN');
    assert.equal((await t.call('GET', '/auth/whoami', { token: olga.token })).body.data.role, 'OWNER');

    // Renaming changes nothing of who is who; another user API does.
    assert.equal((await t.call('PATCH', `/git-self-hosted-servers/${server.id}`, { body: { data: { name: 'gitlab' } } })).status, 200);
    assert.equal((await t.call('GET', '/git-identities', { token: olga.token })).body.data.length, 1);
    const moved = await t.call('PATCH', `/git-self-hosted-servers/${server.id}`, { body: { data: { userUrl: `${oauth.issuer.url}/userinfo?v=2` } } });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.deepEqual((await t.call('GET', '/git-identities', { token: olga.token })).body.data, []);
    assert.equal((await browser.get(`/orgs/${orgId}/runs`)).status, 303, 'the sessions its links signed in have ended');
    assert.equal((await signIn(newBrowser(), server.id)).status, 403, 'the account signs in no one until it is linked again');
    await t.call('PATCH', `/git-self-hosted-servers/${server.id}`, { body: { data: { userUrl: `${oauth.issuer.url}/userinfo` } } });

    const broken = await t.call('POST', '/git-self-hosted-servers', {
      body: { data: { name: 'broken', provider: 'GITLAB', baseUrl: 'https://a b', clientId: 'c', clientSecret: 's' } },
    });
    assertError(broken, 400);
  });

  it("ends a Git sign-in's session, and every key made with it, when the link goes: unlinked, replaced, or its server deleted", async () => {
    account = { id: 7007, username: 'katherine' };
    const katherine = await userCaller(t, 'katherine@example.com', 'MEMBER');
    const mintedKeys = async () =>
      ((await t.call('GET', '/api-keys', { token: katherine.token })).body.data as { name: string }[]).filter((k) =>
        k.name.startsWith('Console sign-in through'),
      );

    assert.equal((await link(newBrowser(), katherine, server.id)).status, 302);
    const browser = newBrowser();
    assert.equal((await signIn(browser, server.id)).status, 200);
    assert.equal((await browser.get(`/orgs/${orgId}/runs`)).status, 200);
    assert.equal((await mintedKeys()).length, 1);
    // A key made with the session's key, and one made with that, follow the link too.
    const session = await t.db.selectFrom('console_sessions').selectAll().where('principal_id', '=', katherine.userId).executeTakeFirstOrThrow();
    const mintedToken = TEST_SECRETS.open(session.sealed_key, `console-session:${session.token_hash}`);
    const made = await t.call('POST', '/api-keys', { token: mintedToken, body: { data: { name: 'made in a git session' } } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const madeByMade = await t.call('POST', '/api-keys', { token: made.body.data.token, body: { data: { name: 'made with that' } } });
    assert.equal(madeByMade.status, 201, JSON.stringify(madeByMade.body));
    const [linked] = (await t.call('GET', '/git-identities', { token: katherine.token })).body.data;
    assert.equal((await t.call('DELETE', `/git-identities/${linked.id}`, { token: katherine.token })).status, 204);
    assert.equal((await browser.get(`/orgs/${orgId}/runs`)).status, 303, 'the session ended with the link, and the page sends to sign-in');
    assert.deepEqual(await mintedKeys(), []);
    for (const key of [made, madeByMade]) assertError(await t.call('GET', '/auth/whoami', { token: key.body.data.token }), 401);

    // Linking another account in the place of the one a session came through ends that session.
    assert.equal((await link(newBrowser(), katherine, server.id)).status, 302);
    const third = newBrowser();
    assert.equal((await signIn(third, server.id)).status, 200);
    account = { id: 7008, username: 'katherine-two' };
    assert.equal((await link(newBrowser(), katherine, server.id)).status, 302);
    assert.equal((await third.get(`/orgs/${orgId}/runs`)).status, 303, 'the session ended with the account it came through');
    const relinked = (await t.call('GET', '/git-identities', { token: katherine.token })).body.data;
    assert.deepEqual(
      relinked.map((l: { login: string }) => l.login),
      ['katherine-two'],
    );

    const other = await register('gitlab-two');
    assert.equal((await link(newBrowser(), katherine, other.id)).status, 302);
    const second = newBrowser();
    assert.equal((await signIn(second, other.id)).status, 200);
    assert.equal((await second.get(`/orgs/${orgId}/runs`)).status, 200);
    assert.equal((await t.call('DELETE', `/git-self-hosted-servers/${other.id}`)).status, 204);
    assert.equal((await second.get(`/orgs/${orgId}/runs`)).status, 303, 'the session ended with its server');
    assert.deepEqual(await mintedKeys(), []);
    assert.equal((await t.call('GET', '/auth/whoami', { token: katherine.token })).status, 200, "the user's own key is untouched");
  });

  it("starts a sign-in only from its own page: never on a GET, nor a POST without the sign-in form's token or from another site", async () => {
    const browser = newBrowser();
    const page = await browser.get(`/sign-in/git/${server.id}`);
    assert.equal(page.status, 200);
    assert.match(String(page.body), new RegExp(`You will log in on <code>${new URL(oauth.issuer.url!).host}</code>`));
    assert.ok(![...browser.jar.keys()].some((name) => name.startsWith('plinth_flow_')), 'the page starts nothing');
    assert.equal((await browser.post(`/sign-in/git/${server.id}`, { _signin: 'forged' })).status, 403);
    const token = /name="_signin" value="([^"]+)"/.exec(String(page.body))![1]!;
    const crossSite = await t.app.inject({
      method: 'POST',
      url: `/sign-in/git/${server.id}`,
      headers: { cookie: browser.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
      payload: `_signin=${token}`,
    });
    assert.equal(crossSite.statusCode, 403);
    assert.equal((await browser.get('/sign-in/git/0123456789abcdef0123456789abcdef')).status, 404);
  });

  it('tells a sign-in that came back after its state expired to start again', async () => {
    const ttl = t.app.config.git.stateTtlSeconds;
    t.app.config.git.stateTtlSeconds = 1;
    try {
      const browser = newBrowser();
      const start = await startSignIn(browser, server.id);
      const callback = await throughOAuthServer(String(start.headers.location));
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const handedOn = await browser.get(callback);
      assert.equal(handedOn.status, 302, JSON.stringify(handedOn.body));
      const url = new URL(String(handedOn.headers.location));
      const expired = await browser.get(`${url.pathname}${url.search}`);
      assert.equal(expired.status, 400);
      assert.match(String(expired.body), /expired/);
    } finally {
      t.app.config.git.stateTtlSeconds = ttl;
    }
  });

  it('signs in no one for an unlinked account, a return leg in another browser, or a user who left the organization', async () => {
    account = { id: 4004, username: 'stranger' };
    const refused = await signIn(newBrowser(), server.id);
    assert.equal(refused.status, 403);
    assert.match(String(refused.body), /No Plinth user has linked the account stranger on gitlab/);
    assert.ok(!String(refused.headers['set-cookie'] ?? '').includes('plinth_session='));

    const hopper = await linkedMember('hopper@example.com', 'MEMBER', { id: 5005, username: 'hopper' });
    const starter = newBrowser();
    const start = await startSignIn(starter, server.id);
    const callback = await starter.get(await throughOAuthServer(String(start.headers.location)));
    const handedOn = new URL(String(callback.headers.location));
    const elsewhere = await newBrowser().get(`${handedOn.pathname}${handedOn.search}`);
    assert.equal(elsewhere.status, 400);
    assert.match(String(elsewhere.body), /started in another browser/);

    assert.equal((await t.call('DELETE', `/memberships/${hopper.membershipId}`)).status, 204);
    const gone = await signIn(newBrowser(), server.id);
    assert.equal(gone.status, 403);
    assert.match(String(gone.body), /not a member of the organization/);
  });

  it("shows the reader's linked accounts and the servers to link on their account page, and unlinks from there", async () => {
    const margaret = await linkedMember('margaret@example.com', 'VIEWER', { id: 6006, username: 'margaret' });
    const browser = newBrowser();
    assert.equal((await signIn(browser, server.id)).status, 200);
    const page = await browser.get(`/orgs/${orgId}/account`);
    assert.equal(page.status, 200);
    const html = String(page.body);
    assert.match(html, /<td>margaret<\/td>/);
    assert.match(html, new RegExp(`action="/orgs/${orgId}/account/link/${server.id}"`));
    assert.ok(html.includes(server.signInUrl));

    // The page's link button starts the API's link flow and passes its binding cookie on.
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
    const started = leftFor(await browser.post(`/orgs/${orgId}/account/link/${server.id}`, { _csrf: csrf }));
    assert.equal(started.status, 200);
    assert.ok(String(started.headers.location).startsWith(`${oauth.issuer.url}/authorize`));
    assert.ok([...browser.jar.keys()].some((name) => name.startsWith('plinth_flow_')));
    assert.equal((await browser.get(await throughOAuthServer(String(started.headers.location)))).status, 302);

    const id = (await t.call('GET', '/git-identities', { token: margaret.token })).body.data[0].id;
    const unlinked = await t.app.inject({
      method: 'POST',
      url: `/orgs/${orgId}/account/identities/${id}/unlink`,
      headers: { cookie: browser.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(csrf)}`,
    });
    assert.equal(unlinked.statusCode, 303, unlinked.body);
    assert.deepEqual((await t.call('GET', '/git-identities', { token: margaret.token })).body.data, []);
    assert.equal((await signIn(newBrowser(), server.id)).status, 403, 'an unlinked account signs in no one');
  });
});
