import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { userCaller } from './helpers/callers.ts';
import { consoleBrowser } from './helpers/console.ts';

describe('the console projects and environments page', () => {
  let t: TestApp;
  let orgId: string;
  const browser = consoleBrowser(() => t.app);
  const { request, signIn } = browser;

  before(async () => {
    t = await startTestApp();
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
  });
  after(async () => t?.close());

  const pageUrl = () => `/orgs/${orgId}/environments`;
  const post = (action: string, form: Record<string, string>, cookie: string) => browser.submit(pageUrl(), `/orgs/${orgId}${action}`, form, cookie);
  const sessionOf = async (email: string, role: 'VIEWER' | 'MEMBER') => (await signIn((await userCaller(t, email, role)).token)).cookie!;
  const create = async (path: string, data: Record<string, string>) => (await t.call('POST', path, { body: { data } })).body.data.id as string;
  /** The folded forms of one record, as the page shows them. */
  const formsOf = (body: string, name: string) =>
    [...body.matchAll(/<details class="manage"([^>]*)><summary>Rename or delete ([^<]*)<\/summary>([\s\S]*?)<\/details>/g)].find((m) => m[2] === name);

  it('renames and deletes projects and environments for a MEMBER, once their id is typed', async () => {
    const cookie = await sessionOf('environments-member@example.com', 'MEMBER');
    const projectId = await create('/projects', { givenId: 'shop', name: 'Shop' });
    const envId = await create('/environments', { projectId, givenId: 'live', name: 'Live' });

    assert.equal((await post(`/environments/${envId}/rename`, { name: '  Production ' }, cookie)).status, 303);
    assert.equal((await t.call('GET', `/environments/${envId}`)).body.data.name, 'Production');
    assert.equal((await post(`/projects/${projectId}/rename`, { name: 'Storefront' }, cookie)).status, 303);
    assert.equal((await t.call('GET', `/projects/${projectId}`)).body.data.name, 'Storefront');
    const page = (await request('GET', pageUrl(), { cookie })).body;
    assert.match(page, /<h2 id="project-[^"]+">Storefront <code class="muted">shop<\/code><\/h2><ul><li><a href="[^"]+">Production<\/a>/);
    assert.ok(formsOf(page, 'Production'), 'the environment has its forms');
    assert.equal(formsOf(page, 'Production')![1], '', 'folded');

    const wrong = await post(`/environments/${envId}/delete`, { confirm: 'Production' }, cookie);
    assert.equal(wrong.status, 400);
    const refused = formsOf(wrong.body, 'Production')!;
    assert.match(refused[1], /open/, 'the refused forms are open');
    assert.match(refused[3], /role="alert"><p>Type live exactly to delete the environment Production<\/p>/);
    assert.match(refused[3], new RegExp(`<input id="delete-${envId}"[^>]*value="Production"`), 'what was typed is kept');
    assert.equal((await t.call('GET', `/environments/${envId}`)).status, 200);

    await post(`/environments/${envId}/rename`, { name: 'Production' }, cookie);
    const blank = await post(`/environments/${envId}/rename`, { name: '   ' }, cookie);
    assert.equal(blank.status, 400);
    assert.match(formsOf(blank.body, 'Production')![3], /<form[^>]*\/rename"[^>]*><input[^>]*\/><div class="error" role="alert">/);
    assert.equal((await t.call('GET', `/environments/${envId}`)).body.data.name, 'Production');
  });

  it("shows the API's refusal to delete what still holds stacks or environments, and deletes once they are gone", async () => {
    const cookie = await sessionOf('environments-deleter@example.com', 'MEMBER');
    const projectId = await create('/projects', { givenId: 'data', name: 'Data' });
    const envId = await create('/environments', { projectId, givenId: 'warehouse', name: 'Warehouse' });
    const stackId = await create('/stacks', { projectId, environmentId: envId, name: 'etl' });

    const held = await post(`/environments/${envId}/delete`, { confirm: 'warehouse' }, cookie);
    assert.equal(held.status, 409);
    assert.match(formsOf(held.body, 'Warehouse')![3], /role="alert"><p>Environment warehouse is still used by stacks[^<]*<\/p><ul><li>stacks: etl<\/li>/);
    const project = await post(`/projects/${projectId}/delete`, { confirm: 'data' }, cookie);
    assert.equal(project.status, 409);
    assert.match(formsOf(project.body, 'Data')![3], /role="alert"><p>Project data is still used by [^<]*environments/);

    assert.equal((await t.call('DELETE', `/stacks/${stackId}`)).status, 204);
    assert.equal((await post(`/environments/${envId}/delete`, { confirm: ' warehouse ' }, cookie)).status, 303);
    assert.equal((await t.call('GET', `/environments/${envId}`)).status, 404);
    assert.equal((await post(`/projects/${projectId}/delete`, { confirm: 'data' }, cookie)).status, 303);
    assert.equal((await t.call('GET', `/projects/${projectId}`)).status, 404);
    assert.doesNotMatch((await request('GET', pageUrl(), { cookie })).body, /Warehouse|>Data </);
  });

  it('shows a VIEWER no form, and the API refuses what a VIEWER posts', async () => {
    const projectId = await create('/projects', { givenId: 'docs', name: 'Docs' });
    const envId = await create('/environments', { projectId, givenId: 'preview', name: 'Preview' });
    const cookie = await sessionOf('environments-viewer@example.com', 'VIEWER');
    const page = (await request('GET', pageUrl(), { cookie })).body;
    assert.match(page, />Preview<\/a>/);
    assert.doesNotMatch(page, /Rename or delete|\/rename"|\/delete"|New project|New environment/);
    assert.equal((await post(`/environments/${envId}/rename`, { name: 'Mine' }, cookie)).status, 403);
    assert.equal((await post(`/environments/${envId}/delete`, { confirm: 'preview' }, cookie)).status, 403);
    assert.equal((await post(`/projects/${projectId}/delete`, { confirm: 'docs' }, cookie)).status, 403);
    assert.equal((await t.call('GET', `/environments/${envId}`)).body.data.name, 'Preview');
    assert.equal((await t.call('GET', `/projects/${projectId}`)).status, 200);
  });
});
