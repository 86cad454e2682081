import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { waitFor } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { EMPTY_ALLOW_LIST } from '../src/platform/outbound/address-policy.ts';

describe('code sources', () => {
  let t: TestApp;
  let git: GitServer;
  let projectId: string;
  let environmentId: string;
  before(async () => {
    t = await startTestApp();
    git = await startGitServer({ tokens: ['s3cret-token'] });
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'infra', name: 'Infra' } } })).body.data.id;
    environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
  });
  after(async () => {
    await git.close();
    await t.close();
  });

  const create = (data: Record<string, unknown>, token?: string) => t.call('POST', '/code-sources', { token, body: { data } });

  it('creates, reads, lists, patches and deletes a code source; its token and webhook secret are sealed and never returned', async () => {
    const res = await create({
      name: 'infra',
      givenId: 'infra',
      url: git.repoUrl('private'),
      provider: 'GITEA',
      authType: 'TOKEN',
      token: 's3cret-token',
      webhookSecret: 'a-webhook-secret-of-length',
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const source = res.body.data;
    assert.equal(source.hasToken, true);
    assert.equal(source.hasWebhookSecret, true);
    assert.equal(source.authType, 'TOKEN');
    assert.match(source.webhookUrl, new RegExp(`/webhooks/git/${source.id}$`));
    assert.ok(!JSON.stringify(source).includes('s3cret-token'));
    const row = await t.db.selectFrom('code_sources').selectAll().where('id', '=', source.id).executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes('s3cret-token'), 'the token is not stored in plaintext');
    assert.equal(TEST_SECRETS.open(row.token_sealed!, `code_sources.token:${source.id}`), 's3cret-token');
    assert.deepEqual((await t.call('GET', `/code-sources/${source.id}`)).body.data, source);
    assert.ok((await t.call('GET', '/code-sources')).body.data.some((s: any) => s.id === source.id));
    const patched = await t.call('PATCH', `/code-sources/${source.id}`, { body: { data: { name: 'infra-repo', webhookSecret: null } } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(patched.body.data.name, 'infra-repo');
    assert.equal(patched.body.data.hasWebhookSecret, false);
    assert.equal((await t.call('DELETE', `/code-sources/${source.id}`)).status, 204);
    assertError(await t.call('GET', `/code-sources/${source.id}`), 404, 'Api:CodeSource:NOT_FOUND');
  });

  it('authentication settings must agree with authType; credentials in the URL are refused; unknown references are 404', async () => {
    assertError(await create({ name: 'x', url: git.repoUrl('public'), authType: 'TOKEN' }), 422, 'Api:CodeSource:INVALID_AUTH');
    assertError(await create({ name: 'x', url: git.repoUrl('public'), token: 'abc' }), 422, 'Api:CodeSource:INVALID_AUTH');
    assertError(await create({ name: 'x', url: 'http://user:pw@127.0.0.1/x.git' }), 422, 'Api:CodeSource:CREDENTIAL_IN_URL');
    assertError(await create({ name: 'x', url: 'file:///etc/passwd' }), 400);
    assertError(
      await create({ name: 'x', url: git.repoUrl('public'), authType: 'OAUTH', gitSelfHostedServerId: 'nope' }),
      404,
      'Api:GitSelfHostedServer:NOT_FOUND',
    );
    assertError(
      await create({ name: 'x', url: git.repoUrl('public'), authType: 'APP_INSTALLATION', gitAppInstallationId: 'nope' }),
      404,
      'Api:GitAppInstallation:NOT_FOUND',
    );
  });

  it('a MEMBER or VIEWER reads code sources but may not manage them; another organization sees a 404', async () => {
    const source = (await create({ name: 'pub', url: git.repoUrl('public') })).body.data;
    const member = await serviceAccountCaller(t, 'MEMBER');
    assert.equal((await t.call('GET', `/code-sources/${source.id}`, { token: member.token })).status, 200);
    assertError(await create({ name: 'm', url: git.repoUrl('public') }, member.token), 403);
    assertError(await t.call('DELETE', `/code-sources/${source.id}`, { token: member.token }), 403);
    const other = await createOrganization(t, 'Elsewhere');
    assertError(await t.call('GET', `/code-sources/${source.id}`, { headers: inOrg(other) }), 404);
    assertError(await t.call('GET', `/code-source/${source.id}/branches`, { headers: inOrg(other) }), 404);
  });

  it('a stack must point at a code source of its organization, and the source cannot be deleted while the stack uses it', async () => {
    const source = (await create({ name: 'used', givenId: 'used', url: git.repoUrl('public') })).body.data;
    const other = await createOrganization(t, 'Foreign');
    const foreign = (await t.call('POST', '/code-sources', { headers: inOrg(other), body: { data: { name: 'f', url: git.repoUrl('public') } } })).body.data;
    const stack = (data: Record<string, unknown>) => t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'net', ...data } } });
    assertError(await stack({ source: { codeSourceId: 'missing', ref: 'main' } }), 404, 'Api:CodeSource:NOT_FOUND');
    assertError(await stack({ source: { codeSourceId: foreign.id, ref: 'main' } }), 404, 'Api:CodeSource:NOT_FOUND');
    const created = await stack({ givenId: 'net', source: { codeSourceId: source.id, ref: 'main', path: 'stacks/app' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assertError(await t.call('PATCH', `/stacks/${created.body.data.id}`, { body: { data: { source: { codeSourceId: foreign.id } } } }), 404);
    const refused = await t.call('DELETE', `/code-sources/${source.id}`);
    assertError(refused, 409, 'Api:CodeSource:IN_USE');
    assert.match(JSON.stringify(refused.body.details), /stacks: net/);
    assert.equal((await t.call('DELETE', `/stacks/${created.body.data.id}`)).status, 204);
    assert.equal((await t.call('DELETE', `/code-sources/${source.id}`)).status, 204);
  });

  it('lists every branch with its head commit over the Git protocol, a page at a time', async () => {
    const source = (await create({ name: 'branches', url: git.repoUrl('public') })).body.data;
    const all = await t.call('GET', `/code-source/${source.id}/branches`);
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.deepEqual(
      all.body.data.map((b: any) => b.name),
      ['dev', 'feature/x', 'main'],
    );
    assert.equal(all.body.data[2].commitSha, git.head('public', 'main'));
    const first = await t.call('GET', `/code-source/${source.id}/branches?limit=2`);
    assert.deepEqual(
      first.body.data.map((b: any) => b.name),
      ['dev', 'feature/x'],
    );
    const second = await t.call('GET', `/code-source/${source.id}/branches?limit=2&cursor=${first.body.meta.nextCursor}`);
    assert.deepEqual(
      second.body.data.map((b: any) => b.name),
      ['main'],
    );
    assert.equal(second.body.meta.nextCursor, undefined);
    for (let i = 0; i < 60; i++) git.branch('public', `release/${String(i).padStart(2, '0')}`);
    const many = await t.call('GET', `/code-source/${source.id}/branches`);
    assert.equal(many.body.data.length, 63, 'all of them, past the size of a page');
    assert.equal(many.body.meta.totalCount, 63);
    assert.equal(many.body.meta.limit, 10_000, 'the most one answer holds');
    assert.equal(many.body.meta.nextCursor, undefined);
    assert.equal((await t.call('GET', `/code-source/${source.id}/branches?limit=200`)).body.data.length, 63);
  });

  it('a private repository lists with its token; a refused or missing token, a missing repository and an unreachable server each say which', async () => {
    const ok = (await create({ name: 'priv', url: git.repoUrl('private'), authType: 'TOKEN', token: 's3cret-token' })).body.data;
    const listed = await t.call('GET', `/code-source/${ok.id}/branches`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.equal(listed.body.data.length, 3);
    const wrong = (await create({ name: 'wrong', url: git.repoUrl('private'), authType: 'TOKEN', token: 'not-the-token' })).body.data;
    const refused = await t.call('GET', `/code-source/${wrong.id}/branches`);
    assertError(refused, 422, 'Git:Credential:REFUSED');
    assert.ok(!JSON.stringify(refused.body).includes('not-the-token'));
    const none = (await create({ name: 'none', url: git.repoUrl('private') })).body.data;
    assertError(await t.call('GET', `/code-source/${none.id}/branches`), 422, 'Git:Credential:REFUSED');
    const missing = (await create({ name: 'missing', url: `${git.url}/nothing.git` })).body.data;
    assertError(await t.call('GET', `/code-source/${missing.id}/branches`), 422, 'Git:Repository:NOT_FOUND');
    const down = (await create({ name: 'down', url: 'http://127.0.0.1:9/repo.git' })).body.data;
    assertError(await t.call('GET', `/code-source/${down.id}/branches`), 502, 'Git:Repository:UNREACHABLE');
  });

  it("a repository on the host's loopback, a private network or the metadata address is a 422 before anything is sent, whatever listens there", async () => {
    const saved = t.app.config.git.outbound;
    t.app.config.git.outbound = { allow: EMPTY_ALLOW_LIST };
    const sent = git.requests.length;
    try {
      const urls = [
        git.repoUrl('public'),
        'http://127.0.0.1:9/repo.git',
        `http://localhost:${new URL(git.url).port}/public.git`,
        'http://169.254.169.254/latest.git',
        'http://[::ffff:10.0.0.1]/r.git',
      ];
      const answers = [];
      for (const [i, url] of urls.entries()) {
        const source = (await create({ name: `internal-${i}`, url })).body.data;
        const res = await t.call('GET', `/code-source/${source.id}/branches`);
        assertError(res, 422, 'Git:Repository:NOT_ALLOWED');
        answers.push(res.body.message.replace(/\(.*\)/, ''));
      }
      assert.equal(new Set(answers).size, 1, 'a listening service and a closed port answer alike: no oracle');
      assert.equal(git.requests.length, sent, 'nothing reached the Git server');
    } finally {
      t.app.config.git.outbound = saved;
    }
  });

  it("a path that starts with // stays a path on the code source's own host", async () => {
    const sent = git.requests.length;
    const source = (await create({ name: 'double-slash', url: `${git.url}//evil.example/public.git` })).body.data;
    await t.call('GET', `/code-source/${source.id}/branches`);
    // Whatever the Git server answers, the request was its: the path was not taken for another host.
    assert.equal(git.requests.length, sent + 1);
    assert.match(git.requests.at(-1)!, /\/public\.git\/info\/refs/);
  });

  it('a server slower than PLINTH_GIT_TIMEOUT_MS is a 504 within the bound', async () => {
    const source = (await create({ name: 'slow', url: git.repoUrl('public') })).body.data;
    const saved = t.app.config.git.remoteTimeoutMs;
    t.app.config.git.remoteTimeoutMs = 500;
    git.delayMs = 5_000;
    try {
      const started = Date.now();
      assertError(await t.call('GET', `/code-source/${source.id}/branches`), 504, 'Git:Repository:TIMEOUT');
      assert.ok(Date.now() - started < 4_000);
    } finally {
      git.delayMs = 0;
      t.app.config.git.remoteTimeoutMs = saved;
    }
  });

  it("bounds the listings under way per caller and per organization, so one tenant's members cannot take the process", async () => {
    const source = (await create({ name: 'busy', url: git.repoUrl('public') })).body.data;
    const otherOrg = await createOrganization(t, 'Listing elsewhere');
    const elsewhere = (await t.call('POST', '/code-sources', { headers: inOrg(otherOrg), body: { data: { name: 'x', url: git.repoUrl('public') } } })).body
      .data;
    const viewers = [await serviceAccountCaller(t, 'VIEWER'), await serviceAccountCaller(t, 'VIEWER')];
    const list = (token?: string, id = source.id, headers?: Record<string, string>) => t.call('GET', `/code-source/${id}/branches`, { token, headers });
    // The Git server holds every answer: the listings stay under way until it is released.
    const release = git.hold();
    try {
      const seen = git.requests.length;
      // Two VIEWERs of one organization, four listings each: the organization's eight.
      const held = viewers.flatMap((v) => [1, 2, 3, 4].map(() => list(v.token)));
      await waitFor('eight listings under way', async () => (git.requests.length >= seen + 8 ? true : undefined));
      const overCaller = await list(viewers[0].token);
      assertError(overCaller, 429, 'Git:Repository:TOO_MANY_LISTINGS');
      assert.equal(overCaller.headers['retry-after'], '2');
      assert.match(overCaller.body.message, /At most 4 .* by one caller/);
      const overOrganization = await list();
      assertError(overOrganization, 429, 'Git:Repository:TOO_MANY_LISTINGS');
      assert.match(overOrganization.body.message, /At most 8 .* in one organization/);
      const otherTenant = list(undefined, elsewhere.id, inOrg(otherOrg));
      await waitFor("the other organization's listing under way", async () => (git.requests.length >= seen + 9 ? true : undefined));
      release();
      for (const res of await Promise.all(held)) assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal((await otherTenant).status, 200, 'another organization still lists');
    } finally {
      release();
    }
    assert.equal((await list(viewers[0].token)).status, 200, 'the slots are given back');
    for (let i = 0; i < 4; i++) assertError(await list(viewers[0].token, 'ffffffffffffffffffffffffffffffff'), 404);
    assert.equal((await list(viewers[0].token)).status, 200, 'a failed listing gives its slot back too');
  });
});
