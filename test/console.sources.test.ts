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

  it("shows an environment's default values with where each comes from", async () => {
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'web', name: 'Web' } } })).body.data.id;
    const envId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
    const region = (await t.call('GET', '/default-value-definitions?limit=200')).body.data.find((d: { givenId: string }) => d.givenId === 'aws_region').id;
    const set = await t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: region, parentId: orgId, value: 'eu-west-1' } } });
    assert.equal(set.status, 201, JSON.stringify(set.body));
    const url = `/orgs/${orgId}/environments/${envId}/defaults`;
    const page = await request('GET', url, { cookie });
    assert.equal(page.status, 200);
    assert.match(
      page.body,
      /<code>aws_region<\/code><\/td><td><code>&quot;eu-west-1&quot;<\/code><\/td><td>set on the organization<\/td>|<code>aws_region<\/code><\/td><td><code>"eu-west-1"<\/code><\/td><td>set on the organization<\/td>/,
    );
    await t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: region, parentId: envId, value: 'us-east-1' } } });
    assert.match((await request('GET', url, { cookie })).body, /us-east-1[\s\S]*set on this environment/);
  });
});
