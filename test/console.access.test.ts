import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { userCaller } from './helpers/callers.ts';
import { consoleBrowser } from './helpers/console.ts';

describe('the console access pages', () => {
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

  const accessUrl = () => `/orgs/${orgId}/access`;
  const submit = (action: string, form: Record<string, string>, as = cookie) => browser.submit(accessUrl(), `${accessUrl()}${action}`, form, as);

  it('invites a member, changes the role and removes them, showing a refusal by its form', async () => {
    assert.equal((await submit('/members', { email: 'new.member@example.com', role: 'VIEWER' })).status, 303);
    const membership = (await t.call('GET', '/memberships?limit=200')).body.data.find((m: { email: string }) => m.email === 'new.member@example.com');
    assert.equal(membership.role, 'VIEWER');
    const again = await submit('/members', { email: 'new.member@example.com', role: 'VIEWER' });
    assert.equal(again.status, 409);
    assert.match(again.body, /<h3 id="invite">Invite a member<\/h3><form[^>]*><input[^>]*\/><div class="error" role="alert">/);
    assert.equal((await submit(`/members/${membership.id}/role`, { role: 'MEMBER' })).status, 303);
    assert.equal((await t.call('GET', `/memberships/${membership.id}`)).body.data.role, 'MEMBER');
    assert.equal((await submit(`/members/${membership.id}/remove`, {})).status, 303);
    assert.equal((await t.call('GET', `/memberships/${membership.id}`)).status, 404);
  });

  it("shows a new key's token once, on the page that answers its form, and revokes it", async () => {
    assert.equal((await submit('/service-accounts', { name: 'deployer', role: 'MEMBER' })).status, 303);
    const account = (await t.call('GET', '/service-accounts?limit=200')).body.data.find((a: { name: string }) => a.name === 'deployer');
    const created = await submit('/keys', { name: 'ci', serviceAccountId: account.id, expiresAt: '' });
    assert.equal(created.status, 201);
    const token = /<code class="token">(plk_[^<]+)<\/code>/.exec(created.body)?.[1];
    assert.ok(token, 'the token is on the page');
    assert.match(created.body, /It is shown this once/);
    assert.equal((await t.call('GET', '/auth/whoami', { token })).status, 200, 'and it works');
    const later = await request('GET', accessUrl(), { cookie });
    assert.ok(!later.body.includes(token), 'never shown again');
    assert.match(later.body, /service account deployer/);
    const key = (await t.call('GET', '/api-keys?limit=200')).body.data.find((k: { name: string }) => k.name === 'ci');
    assert.equal((await submit(`/keys/${key.id}/revoke`, {})).status, 303);
    assert.equal((await t.call('GET', '/auth/whoami', { token })).status, 401);
    const bad = await submit('/keys', { name: 'old', serviceAccountId: '', expiresAt: '2001-01-01T00:00:00Z' });
    assert.equal(bad.status, 422);
    assert.match(bad.body, /<div class="error" role="alert">/);
  });

  it("offers an ADMIN no form the API would refuse: nothing on an OWNER, no OWNER role, no other user's key to revoke", async () => {
    const admin = await userCaller(t, 'access-admin@example.com', 'ADMIN');
    const session = (await signIn(admin.token)).cookie!;
    const page = await request('GET', accessUrl(), { cookie: session });
    assert.equal(page.status, 200);
    assert.match(page.body, /Invite a member/);
    assert.doesNotMatch(page.body, /<option value="OWNER"/);
    const owner = (await t.call('GET', '/memberships?limit=200')).body.data.find((m: { role: string }) => m.role === 'OWNER');
    assert.ok(!page.body.includes(`/access/members/${owner.id}/role`), "no form on the OWNER's membership");
    const others = (await t.call('GET', '/api-keys?limit=200')).body.data.filter(
      (k: { userId?: string; revokedAt?: string }) => k.userId === owner.userId && !k.revokedAt,
    );
    assert.ok(others.length > 0);
    for (const key of others) assert.ok(!page.body.includes(`/access/keys/${key.id}/revoke`), "no revoke on another user's key");
    const adminId = (await t.call('GET', '/auth/whoami', { token: admin.token })).body.data.userId;
    const ownKeys = (await t.call('GET', '/api-keys?limit=200')).body.data.filter(
      (k: { userId?: string; revokedAt?: string }) => k.userId === adminId && !k.revokedAt,
    );
    assert.ok(page.body.includes(`/access/keys/${ownKeys[0].id}/revoke`), 'a revoke on its own key');
  });

  it('lets a VIEWER see members and their own keys but manage nothing, and keeps the audit log to ADMIN and above', async () => {
    const viewer = await userCaller(t, 'access-viewer@example.com', 'VIEWER');
    const session = (await signIn(viewer.token)).cookie!;
    const page = await request('GET', accessUrl(), { cookie: session });
    assert.equal(page.status, 200);
    assert.match(page.body, /Your own keys/);
    assert.doesNotMatch(page.body, /Invite a member|New service account|Change role/);
    assert.doesNotMatch(page.body, />Audit</);
    const forced = await submit('/members', { email: 'sneaky@example.com', role: 'OWNER' }, session);
    assert.equal(forced.status, 403, 'the API refuses what the page does not offer');
    assert.equal((await request('GET', `/orgs/${orgId}/audit`, { cookie: session })).status, 403);

    const audit = await request('GET', `/orgs/${orgId}/audit?action=membership.create`, { cookie });
    assert.equal(audit.status, 200);
    assert.match(audit.body, /<code>membership\.create<\/code>/);
    assert.doesNotMatch(audit.body, /<code>api-key\.create<\/code>/);
    assert.equal((await request('GET', `/orgs/${orgId}/audit?outcome=MAYBE`, { cookie })).status, 400);
  });
});
