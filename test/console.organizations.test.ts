import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { userCaller } from './helpers/callers.ts';
import { consoleBrowser } from './helpers/console.ts';

describe('the console organizations page', () => {
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

  const pageUrl = () => `/orgs/${orgId}/organization`;
  const post = (path: string, form: Record<string, string>, as = cookie) => browser.submit(pageUrl(), `/orgs/${orgId}${path}`, form, as);

  it('creates an organization and switches to it, and renames this one, refusing a bad email by its form', async () => {
    const created = await post('/organizations', { name: 'Second <org>', billingEmail: 'billing@example.com' });
    assert.equal(created.status, 303);
    const secondId = created.location!.split('/')[2];
    const inbox = await request('GET', created.location!, { cookie });
    assert.equal(inbox.status, 200, 'the key acts in the new organization too');
    const page = await request('GET', pageUrl(), { cookie });
    assert.ok(page.body.includes(`href="/orgs/${secondId}/runs">Second &lt;org></a>`));
    assert.match(page.body, /\(this one\)/);

    assert.equal((await post('/organization', { name: 'Renamed', billingEmail: 'owner@example.com' })).status, 303);
    assert.equal((await t.call('GET', `/organizations/${orgId}`)).body.data.name, 'Renamed');
    const bad = await post('/organization', { name: 'Renamed', billingEmail: 'not-an-email' });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /<h2 id="edit-org">This organization<\/h2><form[^>]*><input[^>]*\/><div class="error" role="alert">/);
  });

  it('shows a member who is not an OWNER no rename form, and the API refuses one anyway', async () => {
    const admin = await userCaller(t, 'org-admin@example.com', 'ADMIN');
    const session = (await signIn(admin.token)).cookie!;
    const page = await request('GET', pageUrl(), { cookie: session });
    assert.equal(page.status, 200);
    assert.doesNotMatch(page.body, /This organization<\/h2>/);
    assert.equal((await post('/organization', { name: 'Taken over', billingEmail: 'x@example.com' }, session)).status, 403);
  });
});
