import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { userCaller } from './helpers/callers.ts';
import { consoleBrowser, csrfOf } from './helpers/console.ts';
import { createStack, getRun, startEngineTestApp, type EngineTestApp } from './helpers/engine.ts';

describe('the console stack pages', () => {
  let t: EngineTestApp;
  let orgId: string;
  let cookie: string;
  let environment: { id: string; projectId: string };
  const browser = consoleBrowser(() => t.app);
  const { request, signIn } = browser;

  before(async () => {
    t = await startEngineTestApp();
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    cookie = (await signIn(t.adminToken)).cookie!;
    const project = await t.call('POST', '/projects', { body: { data: { givenId: 'web', name: 'Web' } } });
    environment = (await t.call('POST', '/environments', { body: { data: { projectId: project.body.data.id, givenId: 'prod', name: 'Prod' } } })).body.data;
  });
  after(async () => t?.close());

  /** Posts a form of a page as its browser would: the page first, for its anti-forgery token. */
  const submit = (pageUrl: string, action: string, form: Record<string, string>, as = cookie) => browser.submit(pageUrl, action, form, as);

  it('creates a project and an environment from their page, and shows a refusal by its form', async () => {
    const pageUrl = `/orgs/${orgId}/environments`;
    assert.equal((await submit(pageUrl, `/orgs/${orgId}/projects`, { name: 'Data', givenId: 'data' })).status, 303);
    const project = (await t.call('GET', '/projects?limit=200')).body.data.find((p: { givenId: string }) => p.givenId === 'data');
    assert.equal(project.name, 'Data');
    const created = await submit(pageUrl, `/orgs/${orgId}/environments`, { projectId: project.id, name: 'Staging', givenId: 'staging' });
    assert.equal(created.status, 303);
    const page = await request('GET', pageUrl, { cookie });
    assert.match(page.body, /<h2 id="project-\w+">Data <code class="muted">data<\/code><\/h2><ul><li><a href="[^"]+">Staging<\/a>/);
    const taken = await submit(pageUrl, `/orgs/${orgId}/projects`, { name: 'Again', givenId: 'data' });
    assert.equal(taken.status, 409);
    assert.match(
      taken.body,
      /<section aria-labelledby="new-project" class="panel-form"><h2 id="new-project">New project<\/h2><form[^>]*><input[^>]*\/><div class="error" role="alert">/,
    );
    const viewer = await userCaller(t, 'env-viewer@example.com', 'VIEWER');
    const seen = await request('GET', pageUrl, { cookie: (await signIn(viewer.token)).cookie });
    assert.match(seen.body, /Staging/);
    assert.doesNotMatch(seen.body, /New project|New environment/);
  });

  it('creates a stack from the stacks page, and shows a refusal above the form', async () => {
    const stacksUrl = `/orgs/${orgId}/stacks`;
    const list = await request('GET', stacksUrl, { cookie });
    assert.equal(list.status, 200);
    assert.match(list.body, /<option value="[^"]+">Web \/ Prod<\/option>/);
    const created = await submit(stacksUrl, stacksUrl, { name: 'site <b>', environmentId: environment.id, codeSourceId: '', ref: '', path: '' });
    assert.equal(created.status, 303);
    const stackId = created.location!.split('/').pop()!;
    const stack = (await t.call('GET', `/stacks/${stackId}`)).body.data;
    assert.equal(stack.name, 'site <b>');
    assert.equal(stack.projectId, environment.projectId);

    const listed = await request('GET', `${stacksUrl}?environmentId=${environment.id}`, { cookie });
    assert.ok(listed.body.includes('site &lt;b>'));
    assert.match(listed.body, /<td>Web \/ Prod<\/td>/);

    const refused = await submit(stacksUrl, stacksUrl, { name: '', environmentId: environment.id });
    assert.ok(refused.status >= 400 && refused.status < 500, String(refused.status));
    assert.match(refused.body, /<div class="error" role="alert">/);
    assert.match(refused.body, /New stack/);
  });

  it('starts a run, saves variables (keeping a bad text to mend), and keeps sensitive values write-only', async () => {
    const stack = await createStack(t, [{ id: 'build', command: 'true' }]);
    const stackUrl = `/orgs/${orgId}/stacks/${stack.id}`;
    const started = await submit(stackUrl, `${stackUrl}/runs`, { action: 'plan', description: 'try it' });
    assert.equal(started.status, 303);
    const runId = started.location!.split('/').pop()!;
    const run = await getRun(t, runId);
    assert.equal(run.action, 'plan');
    assert.equal(run.description, 'try it');
    assert.match((await request('GET', stackUrl, { cookie })).body, new RegExp(`href="/orgs/${orgId}/runs/${runId}"`));

    const saved = await submit(stackUrl, `${stackUrl}/variables`, { variables: '{"region": "eu-west-1", "replicas": 2}' });
    assert.equal(saved.status, 303);
    assert.deepEqual((await t.call('GET', `/stacks/${stack.id}`)).body.data.variables, { region: 'eu-west-1', replicas: 2 });
    const bad = await submit(stackUrl, `${stackUrl}/variables`, { variables: '{"region": ' });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /The variables are not valid JSON/);
    assert.ok(bad.body.includes('{&quot;region&quot;: </textarea>') || bad.body.includes('{"region": </textarea>'), 'what was typed is kept');

    const secret = 'console-sensitive-value-42';
    assert.equal((await submit(stackUrl, `${stackUrl}/sensitive-variables`, { name: 'db_password', value: secret })).status, 303);
    const page = await request('GET', stackUrl, { cookie });
    assert.match(page.body, /<code>db_password<\/code>/);
    assert.ok(!page.body.includes(secret), 'a sensitive value is never rendered');
    const refused = await submit(stackUrl, `${stackUrl}/sensitive-variables`, { name: 'bad name!', value: secret });
    assert.ok(refused.status >= 400 && refused.status < 500);
    assert.ok(!refused.body.includes(secret), 'nor echoed back by a refused form');
    assert.equal((await submit(stackUrl, `${stackUrl}/sensitive-variables/db_password/delete`, {})).status, 303);
    assert.deepEqual((await t.call('GET', `/stacks/${stack.id}/sensitive-variables`)).body.data, []);
  });

  /** The stack page's settings: whether folded, and the forms inside. */
  const settingsOf = (body: string) =>
    /<h2 id="stack-settings">Settings<\/h2><details class="manage"([^>]*)><summary>[^<]*<\/summary>([\s\S]*?)<\/details>/.exec(body);

  it('renames a stack, changes its code and deletes it for a MEMBER, once its name is typed', async () => {
    const member = (await signIn((await userCaller(t, 'stack-settings-member@example.com', 'MEMBER')).token)).cookie!;
    const sourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'infra', url: 'https://git.example.com/team/infra.git' } } })).body.data.id;
    const created = await t.call('POST', '/stacks', { body: { data: { projectId: environment.projectId, environmentId: environment.id, name: 'network' } } });
    const stackId = created.body.data.id as string;
    const stackUrl = `/orgs/${orgId}/stacks/${stackId}`;
    const post = (form: string, fields: Record<string, string>) => submit(stackUrl, `${stackUrl}/${form}`, fields, member);
    const stored = async () => (await t.call('GET', `/stacks/${stackId}`)).body.data;

    const page = (await request('GET', stackUrl, { cookie: member })).body;
    assert.equal(settingsOf(page)?.[1], '', 'the settings are folded');
    assert.match(settingsOf(page)![2], /<option value="[^"]+">infra<\/option>/);

    assert.equal((await post('rename', { name: '  edge network ' })).status, 303);
    assert.equal((await stored()).name, 'edge network');
    const blank = await post('rename', { name: '   ' });
    assert.equal(blank.status, 400);
    const refusedRename = settingsOf(blank.body)!;
    assert.match(refusedRename[1], /open/, 'a refusal opens the settings');
    assert.match(refusedRename[2], /<form[^>]*\/rename"[^>]*><input[^>]*\/><div class="error" role="alert">/);
    assert.equal((await stored()).name, 'edge network');

    const code = { codeSourceId: sourceId, ref: ' main ', path: 'infra/live', onPush: 'plan' };
    assert.equal((await post('code', code)).status, 303);
    assert.deepEqual((await stored()).source, { codeSourceId: sourceId, ref: 'main', path: 'infra/live', onPush: 'plan' });
    const shown = settingsOf((await request('GET', stackUrl, { cookie: member })).body)![2];
    assert.match(shown, new RegExp(`<option value="${sourceId}" selected`));
    assert.match(shown, /id="settings-ref"[^>]*value="main"/);
    assert.match(shown, /<option value="plan" selected/);

    const unknown = await post('code', { ...code, codeSourceId: '0196a3c7e1f07a2b9c3d4e5f60718293', ref: 'release' });
    assert.equal(unknown.status, 404);
    const refusedCode = settingsOf(unknown.body)![2];
    assert.match(refusedCode, /<form[^>]*\/code"[^>]*><input[^>]*\/><div class="error" role="alert"><p>CodeSource 0196a3c7e1f07a2b9c3d4e5f60718293 not found/);
    assert.match(refusedCode, /id="settings-ref"[^>]*value="release"/, 'what was typed is kept');
    assert.equal((await stored()).source.ref, 'main');
    assert.equal((await post('code', { codeSourceId: '', ref: '', path: '', onPush: 'apply' })).status, 303);
    assert.equal((await stored()).source?.codeSourceId, undefined, 'no code source');

    const wrong = await post('delete', { confirm: 'network' });
    assert.equal(wrong.status, 400);
    const refusedDelete = settingsOf(wrong.body)!;
    assert.match(refusedDelete[2], /role="alert"><p>Type edge network exactly to delete the stack edge network<\/p>/);
    assert.match(refusedDelete[2], /<input id="delete-stack"[^>]*value="network"/, 'what was typed is kept');

    const run = (await t.call('POST', `/stacks/${stackId}/pipeline-run`, { body: { data: { action: 'plan' } } })).body.data;
    const busy = await post('delete', { confirm: 'edge network' });
    assert.equal(busy.status, 409);
    assert.match(settingsOf(busy.body)![2], /role="alert"><p>Stack \w+ has a run that is not finished; cancel it first<\/p>/);
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/cancel`)).status, 200);

    const deleted = await post('delete', { confirm: ' edge network ' });
    assert.equal(deleted.status, 303);
    assert.equal(deleted.location, `/orgs/${orgId}/stacks`);
    assert.equal((await t.call('GET', `/stacks/${stackId}`)).status, 404);
  });

  it("shows a VIEWER no settings, and the API refuses a VIEWER's rename, code change and delete", async () => {
    const stack = (await t.call('POST', '/stacks', { body: { data: { projectId: environment.projectId, environmentId: environment.id, name: 'kept' } } })).body
      .data;
    const stackUrl = `/orgs/${orgId}/stacks/${stack.id}`;
    const viewer = (await signIn((await userCaller(t, 'stack-settings-viewer@example.com', 'VIEWER')).token)).cookie!;
    const page = (await request('GET', stackUrl, { cookie: viewer })).body;
    assert.doesNotMatch(page, /Settings|\/rename"|\/code"|\/delete"/);
    const csrf = csrfOf(page);
    const forced = (form: string, fields: Record<string, string>) =>
      request('POST', `${stackUrl}/${form}`, { cookie: viewer, form: { _csrf: csrf, ...fields } });
    assert.equal((await forced('rename', { name: 'mine' })).status, 403);
    assert.equal((await forced('code', { codeSourceId: '', onPush: 'none' })).status, 403);
    assert.equal((await forced('delete', { confirm: 'kept' })).status, 403);
    const stored = (await t.call('GET', `/stacks/${stack.id}`)).body.data;
    assert.equal(stored.name, 'kept');
    assert.equal(stored.source, undefined);
  });

  it('lists state versions to an ADMIN and compares two, and shows a VIEWER no form and no state', async () => {
    const stack = (await t.call('POST', '/stacks', { body: { data: { projectId: environment.projectId, environmentId: environment.id, name: 'stateful' } } }))
      .body.data;
    const resource = (cidr: string, password: string) => ({
      mode: 'managed',
      type: 'aws_vpc',
      name: 'main',
      instances: [{ attributes: { id: 'vpc-1', cidr, password }, sensitive_attributes: [[{ type: 'get_attr', value: 'password' }]] }],
    });
    for (const [serial, cidr] of [
      [1, '10.0.0.0/16'],
      [2, '10.1.0.0/16'],
    ] as const) {
      const state = { version: 4, serial, lineage: 'console-lineage', outputs: {}, resources: [resource(cidr, `pw-${serial}-s3cr3t`)] };
      const written = await t.app.inject({
        method: 'POST',
        url: `/state-backend/${stack.serviceStateBackendWorkspace}`,
        headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' },
        payload: JSON.stringify(state),
      });
      assert.equal(written.statusCode, 200, written.body);
    }
    const stackUrl = `/orgs/${orgId}/stacks/${stack.id}`;
    const page = await request('GET', stackUrl, { cookie });
    assert.match(page.body, /State versions/);
    const admin = (await t.call('GET', '/auth/whoami')).body.data;
    assert.match(page.body, new RegExp(`<td>1</td><td>${(admin.fullName || admin.email).replace('.', '\\.')}</td>`), 'who wrote it, by name');
    const [to, from] = [...page.body.matchAll(/<option value="(\w+)"[^>]*>(\d)<\/option>/g)].slice(0, 2).map((m) => m[1]);
    const diff = await request('GET', `${stackUrl}/state-diff?from=${from}&to=${to}`, { cookie });
    assert.equal(diff.status, 200);
    assert.match(diff.body, new RegExp(`<h1>State of stateful: serial 1 → 2 <span class="copy-buttons"><button[^>]*data-copy="${stack.id}"`));
    assert.match(diff.body, /<code>cidr<\/code><\/td><td><code>&quot;10.0.0.0\/16&quot;<\/code><\/td><td><code>&quot;10.1.0.0\/16&quot;<\/code>/);
    assert.match(diff.body, /<code>password<\/code><\/td><td><code>\(sensitive\)<\/code><\/td><td><code>\(sensitive\)<\/code>/);
    assert.ok(!diff.body.includes('s3cr3t'), 'no sensitive value of the state on the page');

    const viewer = await userCaller(t, 'stack-viewer@example.com', 'VIEWER');
    const session = (await signIn(viewer.token)).cookie!;
    const seen = await request('GET', stackUrl, { cookie: session });
    assert.equal(seen.status, 200);
    assert.doesNotMatch(seen.body, /State versions|Start run|Save variables|Set sensitive variable/);
    assert.equal((await request('GET', `${stackUrl}/state-diff?from=${from}&to=${to}`, { cookie: session })).status, 403);
    const list = await request('GET', `/orgs/${orgId}/stacks`, { cookie: session });
    assert.doesNotMatch(list.body, /Create stack/);
    const forced = await request('POST', `${stackUrl}/runs`, { cookie: session, form: { _csrf: csrfOf(seen.body), action: 'apply' } });
    assert.equal(forced.status, 403, 'the API refuses what the page does not offer');
  });
});
