import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { userCaller } from './helpers/callers.ts';
import { consoleBrowser } from './helpers/console.ts';

describe('the console code sources and default values pages', () => {
  let t: TestApp;
  let orgId: string;
  let cookie: string;
  const browser = consoleBrowser(() => t.app);
  const { request, signIn } = browser;

  before(async () => {
    t = await startTestApp();
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    cookie = (await signIn(t.adminToken)).cookie!;
  });
  after(async () => t?.close());

  const sourcesUrl = () => `/orgs/${orgId}/code-sources`;
  const submit = (form: Record<string, string>, as = cookie) => browser.submit(sourcesUrl(), sourcesUrl(), form, as);

  it('adds a code source with a token that is never shown, and shows a refusal without it', async () => {
    const token = 'glpat-console-secret-123456';
    assert.equal((await submit({ name: 'infra', url: 'https://git.example.com/team/infra.git', token })).status, 303);
    const page = await request('GET', sourcesUrl(), { cookie });
    assert.match(page.body, /<td>infra<\/td>/);
    assert.match(page.body, /token · token kept sealed|token<span class="muted"> · token kept sealed/);
    assert.ok(!page.body.includes(token));
    const refused = await submit({ name: 'bad', url: 'not a url', token });
    assert.ok(refused.status >= 400 && refused.status < 500, String(refused.status));
    assert.match(refused.body, /<div class="error" role="alert">/);
    assert.ok(!refused.body.includes(token), 'a refused form does not echo the token');

    const viewer = await userCaller(t, 'sources-viewer@example.com', 'VIEWER');
    const seen = await request('GET', sourcesUrl(), { cookie: (await signIn(viewer.token)).cookie });
    assert.match(seen.body, /<td>infra<\/td>/);
    assert.doesNotMatch(seen.body, /New code source/);
  });

  it('adds a self-hosted Git server for an ADMIN, never showing its client secret, and deletes one once its name is typed', async () => {
    const secret = 'forge-client-secret-987654';
    const bodies: string[] = [];
    const post = async (action: string, form: Record<string, string>, as = cookie) => {
      const res = await browser.submit(sourcesUrl(), `${sourcesUrl()}/git-servers${action}`, form, as);
      bodies.push(res.body);
      return res;
    };
    const read = async (as = cookie) => {
      const res = await request('GET', sourcesUrl(), { cookie: as });
      bodies.push(res.body);
      return res.body;
    };
    const fields = {
      name: 'Forge',
      provider: 'GITEA',
      baseUrl: 'https://forge.example.com/',
      clientId: 'plinth-console',
      clientSecret: secret,
      scopes: 'read:repository',
      authorizeUrl: '',
      tokenUrl: '',
      userUrl: 'https://forge.example.com/login/oauth/userinfo',
    };
    assert.equal((await post('', fields)).status, 303);
    const servers = async () => (await t.call('GET', '/git-self-hosted-servers?limit=200')).body.data as { id: string; name: string }[];
    const forge = (await servers()).find((s) => s.name === 'Forge')!;
    const stored = (await t.call('GET', `/git-self-hosted-servers/${forge.id}`)).body.data;
    assert.equal(stored.provider, 'GITEA');
    assert.equal(stored.scopes, 'read:repository');
    assert.equal(stored.authorizeUrl, 'https://forge.example.com/login/oauth/authorize', 'an empty URL is left to the API to derive');
    assert.equal(stored.userUrl, 'https://forge.example.com/login/oauth/userinfo');
    assert.match(await read(), /Forge <span class="muted">gitea<\/span>/);

    const refused = await post('', { ...fields, name: 'Broken', provider: 'GITLAB', baseUrl: 'forge.example.com' });
    assert.equal(refused.status, 400);
    assert.match(refused.body, /<h3 id="new-server">New self-hosted Git server<\/h3><form[^>]*><input[^>]*\/><div class="error" role="alert">/);
    assert.match(refused.body, /id="server-name"[^>]*value="Broken"/, 'what was typed is kept');
    assert.match(refused.body, /<option value="GITLAB" selected/);
    assert.match(refused.body, /<input id="server-client-secret" type="password" name="clientSecret" required maxlength="4096" autocomplete="off"\/>/);
    assert.ok(!(await servers()).some((s) => s.name === 'Broken'));

    const member = await userCaller(t, 'servers-member@example.com', 'MEMBER');
    const memberSession = (await signIn(member.token)).cookie!;
    const seen = await read(memberSession);
    assert.match(seen, /Forge <span class="muted">gitea<\/span>/);
    assert.doesNotMatch(seen, /New self-hosted Git server|\/git-servers\//);
    assert.equal((await post('', { ...fields, name: 'Sneaky' }, memberSession)).status, 403, 'the API refuses a MEMBER');
    assert.equal((await post(`/${forge.id}/delete`, { confirm: 'Forge' }, memberSession)).status, 403);
    const viewer = await userCaller(t, 'servers-viewer@example.com', 'VIEWER');
    const viewerSession = (await signIn(viewer.token)).cookie!;
    assert.doesNotMatch(await read(viewerSession), /New self-hosted Git server|\/git-servers\//);
    assert.equal((await post('', { ...fields, name: 'Sneaky' }, viewerSession)).status, 403, 'the API refuses a VIEWER');

    const used = await t.call('POST', '/code-sources', {
      body: { data: { name: 'on-forge', url: 'https://forge.example.com/team/app.git', authType: 'OAUTH', gitSelfHostedServerId: forge.id } },
    });
    assert.equal(used.status, 201, JSON.stringify(used.body));
    const wrong = await post(`/${forge.id}/delete`, { confirm: 'forge' });
    assert.equal(wrong.status, 400);
    assert.match(
      wrong.body,
      /<details class="manage" open[^>]*><summary>Delete Forge…<\/summary>[\s\S]*role="alert"><p>Type Forge exactly to delete the Git server Forge/,
    );
    assert.match(wrong.body, /id="delete-server-[^"]+"[^>]*value="forge"/);
    const inUse = await post(`/${forge.id}/delete`, { confirm: 'Forge' });
    assert.equal(inUse.status, 409);
    assert.match(
      inUse.body,
      new RegExp(`role="alert"><p>Git server Forge is still used by code sources[^<]*</p><ul><li>code sources: ${used.body.data.id}</li>`),
    );
    await t.call('DELETE', `/code-sources/${used.body.data.id}`);
    assert.equal((await post(`/${forge.id}/delete`, { confirm: 'Forge' })).status, 303);
    assert.equal((await t.call('GET', `/git-self-hosted-servers/${forge.id}`)).status, 404);

    for (const body of bodies) assert.ok(!body.includes(secret), 'the client secret is never in a page');
  });

  it('deletes a code source for an ADMIN once its name is typed, and shows why the API refuses while stacks use it', async () => {
    const sourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'app-repo', url: 'https://git.example.com/team/app.git' } } })).body.data
      .id;
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'tools', name: 'Tools' } } })).body.data.id;
    const environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'ci', name: 'CI' } } })).body.data.id;
    const stack = await t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'builder', source: { codeSourceId: sourceId } } } });
    assert.equal(stack.status, 201, JSON.stringify(stack.body));
    const post = (form: Record<string, string>, as = cookie) => browser.submit(sourcesUrl(), `${sourcesUrl()}/${sourceId}/delete`, form, as);
    /** The folded delete form of the code source, as the page shows it. */
    const deleteForm = (body: string) => /<details class="manage"([^>]*)><summary>Delete app-repo…<\/summary>([\s\S]*?)<\/details>/.exec(body);

    const page = (await request('GET', sourcesUrl(), { cookie })).body;
    assert.equal(deleteForm(page)?.[1], '', 'folded');
    const wrong = await post({ confirm: 'app' });
    assert.equal(wrong.status, 400);
    const refused = deleteForm(wrong.body)!;
    assert.match(refused[1], /open/);
    assert.match(refused[2], /role="alert"><p>Type app-repo exactly to delete the code source app-repo<\/p>/);
    assert.match(refused[2], new RegExp(`<input id="delete-source-${sourceId}"[^>]*value="app"`), 'what was typed is kept');

    const inUse = await post({ confirm: 'app-repo' });
    assert.equal(inUse.status, 409);
    assert.match(
      deleteForm(inUse.body)![2],
      new RegExp(`role="alert"><p>Code source app-repo is still used by stacks[^<]*</p><ul><li>stacks: ${stack.body.data.id}</li>`),
    );
    assert.equal((await t.call('GET', `/code-sources/${sourceId}`)).status, 200);

    const member = (await signIn((await userCaller(t, 'sources-member@example.com', 'MEMBER')).token)).cookie!;
    assert.doesNotMatch((await request('GET', sourcesUrl(), { cookie: member })).body, /Delete app-repo|\/delete"/);
    assert.equal((await post({ confirm: 'app-repo' }, member)).status, 403, 'the API refuses a MEMBER');
    const viewer = (await signIn((await userCaller(t, 'sources-deleting-viewer@example.com', 'VIEWER')).token)).cookie!;
    assert.equal((await post({ confirm: 'app-repo' }, viewer)).status, 403, 'the API refuses a VIEWER');

    assert.equal((await t.call('DELETE', `/stacks/${stack.body.data.id}`)).status, 204);
    assert.equal((await post({ confirm: ' app-repo ' })).status, 303);
    assert.equal((await t.call('GET', `/code-sources/${sourceId}`)).status, 404);
    assert.doesNotMatch((await request('GET', sourcesUrl(), { cookie })).body, /app-repo/);
  });

  it("shows an environment's default values with where each comes from", async () => {
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'web', name: 'Web' } } })).body.data.id;
    const envId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
    const region = (await t.call('GET', '/default-value-definitions?limit=200')).body.data.find((d: { givenId: string }) => d.givenId === 'aws_region').id;
    const set = await t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: region, parentId: orgId, value: 'eu-west-1' } } });
    assert.equal(set.status, 201, JSON.stringify(set.body));
    const url = `/orgs/${orgId}/environments/${envId}/defaults`;
    const page = await request('GET', url, { cookie });
    assert.equal(page.status, 200);
    assert.match(page.body, new RegExp(`<h1>Default values of Prod <span class="copy-buttons"><button[^>]*data-copy="${envId}"`));
    assert.match(
      page.body,
      /<code>aws_region<\/code><\/td><td><code>&quot;eu-west-1&quot;<\/code><\/td><td>set on the organization<\/td>|<code>aws_region<\/code><\/td><td><code>"eu-west-1"<\/code><\/td><td>set on the organization<\/td>/,
    );
    await t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: region, parentId: envId, value: 'us-east-1' } } });
    assert.match((await request('GET', url, { cookie })).body, /us-east-1[\s\S]*set on this environment/);
  });

  it('sets, changes and removes default values on each scope for a MEMBER, with the refusal by its form', async () => {
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'api', name: 'Api' } } })).body.data.id;
    const envId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'staging', name: 'Staging' } } })).body.data.id;
    const region = (await t.call('GET', '/default-value-definitions?limit=200')).body.data.find((d: { givenId: string }) => d.givenId === 'aws_region').id;
    const member = await userCaller(t, 'defaults-member@example.com', 'MEMBER');
    const session = (await signIn(member.token)).cookie!;
    const url = `/orgs/${orgId}/environments/${envId}/defaults`;
    const post = (action: string, form: Record<string, string>, as = session) => browser.submit(url, `${url}${action}`, form, as);
    const set = (scope: string, value: string) => post('', { defaultValueDefinitionId: region, scope, value });
    const resolved = async () =>
      /<code>aws_region<\/code><\/td><td><code>([^<]*)<\/code><\/td><td>([^<]*)<\/td>/.exec((await request('GET', url, { cookie: session })).body);
    const envValue = async () => (await t.call('GET', `/default-values?parentId=${envId}&defaultValueDefinitionId=${region}`)).body.data[0];

    assert.equal((await set('PROJECT', '"eu-north-1"')).status, 303);
    assert.deepEqual((await resolved())?.slice(1), ['&quot;eu-north-1&quot;', "set on the environment's project"]);
    assert.equal((await set('ENVIRONMENT', '"us-west-2"')).status, 303);
    assert.equal((await set('ENVIRONMENT', '"us-east-2"')).status, 303, 'setting a scope again changes its value');
    assert.deepEqual((await resolved())?.slice(1), ['&quot;us-east-2&quot;', 'set on this environment']);
    const value = await envValue();
    assert.equal(value.value, 'us-east-2');

    assert.equal((await post(`/${value.id}`, { value: '"ca-central-1"' })).status, 303);
    assert.equal((await envValue()).value, 'ca-central-1');
    const page = (await request('GET', url, { cookie: session })).body;
    assert.match(page, /Remove aws_region from this environment, Staging/);
    assert.match(page, /Remove aws_region from its project, Api/);

    const refused = await set('ENVIRONMENT', '"mars-north-1"');
    assert.equal(refused.status, 422);
    assert.match(
      refused.body,
      /<h2 id="set-default">Set a default value<\/h2>[\s\S]*<div class="error" role="alert"><p>The value does not satisfy the schema of aws_region/,
    );
    assert.match(refused.body, /role="alert"><p>[^<]*<\/p><ul><li>\/data\/value[^<]+<\/li>/, "the API's details are listed");
    assert.match(refused.body, /<textarea id="default-value"[^>]*>&quot;mars-north-1&quot;<\/textarea>/, 'what was typed is kept');
    assert.match(refused.body, /<option value="ENVIRONMENT" selected/);
    const notJson = await set('ORGANIZATION', 'eu-west-1');
    assert.equal(notJson.status, 400);
    assert.match(notJson.body, /role="alert"><p>The value is not valid JSON/);
    const badChange = await post(`/${value.id}`, { value: '"nowhere"' });
    assert.equal(badChange.status, 422);
    assert.match(badChange.body, new RegExp(`role="alert">[\\s\\S]*<input id="value-${value.id}"[^>]*value="&quot;nowhere&quot;"`));
    assert.equal((await envValue()).value, 'ca-central-1');

    assert.equal((await post(`/${value.id}/remove`, {})).status, 303);
    assert.equal(await envValue(), undefined);
    assert.deepEqual((await resolved())?.slice(1), ['&quot;eu-north-1&quot;', "set on the environment's project"], "the project's value shows again");

    const viewer = await userCaller(t, 'defaults-viewer@example.com', 'VIEWER');
    const seen = await signIn(viewer.token);
    const viewerPage = (await request('GET', url, { cookie: seen.cookie })).body;
    assert.match(viewerPage, /its project, Api/);
    assert.doesNotMatch(viewerPage, /Set a default value|\/remove"|name="value"/);
    const projectValue = (await t.call('GET', `/default-values?parentId=${projectId}`)).body.data[0];
    assert.equal((await post(`/${projectValue.id}/remove`, {}, seen.cookie)).status, 403, 'the API refuses a VIEWER');
    assert.equal((await post('', { defaultValueDefinitionId: region, scope: 'PROJECT', value: '"us-west-1"' }, seen.cookie)).status, 403);
    assert.equal((await t.call('GET', `/default-values/${projectValue.id}`)).body.data.value, 'eu-north-1');
  });
});
