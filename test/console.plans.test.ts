import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { userCaller } from './helpers/callers.ts';
import { consoleBrowser } from './helpers/console.ts';
import { stepsOf, triggerRun, waitForStep } from './helpers/engine.ts';
import { createTofuStack, stackCode, startTofuTestApp, startTofuWorker, type TofuTestApp } from './helpers/opentofu.ts';

const SECRET = 'console-plan-secret-value';

describe('the console plan page', () => {
  let t: TofuTestApp;
  let orgId: string;
  let cookie: string;
  let runId: string;
  let planStep: { id: string };
  const { request, signIn } = consoleBrowser(() => t.app);

  before(async () => {
    t = await startTofuTestApp();
    const code = stackCode({
      variables: { name: {}, password: { sensitive: true } },
      resources: {
        'standin_network.main': { attributes: { name: '${var.name}', cidr: '10.0.0.0/16' } },
        'standin_network.edge': { attributes: { name: 'edge-<b>hostile</b>' } },
        'standin_login.admin': { attributes: { user: 'admin', password: '${var.password}' } },
      },
    });
    await startTofuWorker(t, code);
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    cookie = (await signIn(t.adminToken)).cookie!;
    const stack = await createTofuStack(t, { name: 'core' });
    await t.call('PUT', `/stacks/${stack.id}/sensitive-variables/password`, { body: { data: { value: SECRET } } });
    runId = (await triggerRun(t, stack.id)).id;
    await waitForStep(t, runId, 'approve', 'WAITING_FOR_APPROVAL', 30_000);
    planStep = (await stepsOf(t, runId)).find((s) => s.stepId === 'plan');
  });
  after(() => t?.close());

  const planUrl = () => `/orgs/${orgId}/steps/${planStep.id}/plan`;
  const addressesOn = (html: string) =>
    [...html.matchAll(/<summary><span class="action action-(\w+)">\w+<\/span> <code>([^<]+)<\/code>/g)].map((m) => `${m[1]} ${m[2]}`);

  it('shows the counts, each change with its action and attributes, and sensitive values hidden', async () => {
    const page = await request('GET', planUrl(), { cookie });
    assert.equal(page.status, 200);
    assert.match(page.body, /\+3 to add[\s\S]*~0 to change[\s\S]*−0 to destroy/);
    // In the plan's own order.
    assert.deepEqual(addressesOn(page.body), ['create standin_network.main', 'create standin_network.edge', 'create standin_login.admin']);
    assert.match(page.body, /<code>password<\/code><\/td><td><span class="muted">—<\/span><\/td><td><code>\(sensitive\)<\/code>/);
    assert.match(page.body, /<code>cidr<\/code><\/td><td><span class="muted">—<\/span><\/td><td><code>&quot;10.0.0.0\/16&quot;<\/code>/);
    assert.match(page.body, /<code>id<\/code><\/td><td><span class="muted">—<\/span><\/td><td><code>\(known after apply\)<\/code>/);
    assert.ok(!page.body.includes(SECRET), 'no sensitive value on the page');
    assert.ok(page.body.includes('edge-&lt;b>hostile&lt;/b>'), 'what the plan says is text');
    assert.ok(page.body.includes(`href="/orgs/${orgId}/steps/${planStep.id}/logs">Raw output`));

    const run = await request('GET', `/orgs/${orgId}/runs/${runId}`, { cookie });
    assert.match(run.body, /\+3 to add/);
    assert.ok(run.body.includes(`href="${planUrl()}">View the plan`));
  });

  it('filters the changes by address and by action, in the query string', async () => {
    const byAddress = await request('GET', `${planUrl()}?address=NETWORK`, { cookie });
    assert.deepEqual(addressesOn(byAddress.body), ['create standin_network.main', 'create standin_network.edge']);
    assert.match(byAddress.body, /2 of 3 changes/);
    assert.match(byAddress.body, /value="NETWORK"/);
    const none = await request('GET', `${planUrl()}?address=network&action=delete`, { cookie });
    assert.deepEqual(addressesOn(none.body), []);
    assert.match(none.body, /<option value="delete" selected>/);
    assert.equal((await request('GET', `${planUrl()}?action=explode`, { cookie })).status, 400);
  });

  it('says so for a step that has made no plan, and shows a VIEWER the plan as the API does', async () => {
    const approval = (await stepsOf(t, runId)).find((s) => s.stepId === 'approve');
    const notAPlan = await request('GET', `/orgs/${orgId}/steps/${approval.id}/plan`, { cookie });
    assert.equal(notAPlan.status, 200);
    assert.match(notAPlan.body, /has made no plan yet/);
    const viewer = await userCaller(t, 'plan-viewer@example.com', 'VIEWER');
    const session = await signIn(viewer.token);
    const seen = await request('GET', planUrl(), { cookie: session.cookie });
    assert.equal(seen.status, 200);
    assert.match(seen.body, /\+3 to add/);
    assert.ok(!seen.body.includes(SECRET));
  });
});
