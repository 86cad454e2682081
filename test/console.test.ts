import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { userCaller } from './helpers/callers.ts';
import { consoleBrowser, csrfOf, readConsoleEvents, type StreamEvent } from './helpers/console.ts';
import { createStack, startEngineTestApp, triggerRun, waitForRunStatus, waitForStep, type EngineTestApp } from './helpers/engine.ts';

describe('the web console', () => {
  let t: EngineTestApp;
  let orgId: string;
  let baseUrl: string;

  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => t?.close());

  const { request, signIn } = consoleBrowser(() => t.app);

  const readEvents = (path: string, cookie: string, onEvent: (e: StreamEvent) => void, lastEventId?: string) =>
    readConsoleEvents(`${baseUrl}${path}`, cookie, onEvent, { lastEventId });

  it('sends a browser without a session to the sign-in form, which is served with a strict CSP', async () => {
    const root = await request('GET', '/');
    assert.equal(root.status, 303);
    assert.equal(root.location, '/sign-in');
    assert.equal((await request('GET', `/orgs/${orgId}/runs`)).location, '/sign-in');
    const form = await request('GET', '/sign-in');
    assert.equal(form.status, 200);
    assert.match(String(form.headers['content-type']), /text\/html/);
    assert.match(form.body, /^<!doctype html>/);
    assert.match(String(form.headers['content-security-policy']), /default-src 'none'; script-src 'self'; style-src 'self'/);
    assert.match(String(form.headers['content-security-policy']), /frame-ancestors 'none'/);
    assert.equal(form.headers['x-frame-options'], 'DENY');
    assert.equal(form.headers['cache-control'], 'no-store');
    assert.doesNotMatch(form.body, /<script>|<style>| style=| on[a-z]+=/, 'no inline script or style');
  });

  it('signs in with an API key into an HttpOnly, SameSite=Strict session cookie, refusing a bad key', async () => {
    const bad = await signIn('plk_not_a_real_key');
    assert.equal(bad.res.status, 401);
    assert.match(bad.res.body, /That key cannot sign in/);
    assert.equal(bad.cookie, undefined);

    const { res, session } = await signIn(t.adminToken);
    assert.equal(res.status, 303);
    assert.equal(res.location, `/orgs/${orgId}/runs`);
    assert.ok(session);
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(session.path, '/');
    assert.ok(session.value.length >= 40);
    assert.ok(!res.body.includes(t.adminToken));
    const stored = await sql<{ sealed_key: string }>`select sealed_key from console_sessions`.execute(t.db);
    assert.ok(stored.rows.length > 0 && stored.rows.every((r) => !r.sealed_key.includes(t.adminToken)), 'the key is stored sealed');
  });

  it('refuses a sign-in POST that did not come from its own form (login CSRF)', async () => {
    const res = await request('POST', '/sign-in', { form: { apiKey: t.adminToken, _signin: 'forged' } });
    assert.equal(res.status, 403);
    assert.equal(
      res.cookies.find((c) => c.name === 'plinth_session'),
      undefined,
    );
  });

  it('lists runs newest first, filters them by status and stack with shareable URLs, and escapes what tenants named', async () => {
    const { cookie } = await signIn(t.adminToken);
    const hostile = await createStack(t, [{ id: 'build', command: 'true' }]);
    await t.call('PATCH', `/stacks/${hostile.id}`, { body: { data: { name: '<script>alert(1)</script>' } } });
    const first = await triggerRun(t, hostile.id, { description: 'first "quoted" <b>run</b>' });
    await waitForRunStatus(t, first.id, 'SUCCEEDED');
    const gated = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const second = await triggerRun(t, gated.id, { description: 'needs a human' });
    await waitForRunStatus(t, second.id, 'WAITING_FOR_APPROVAL');

    const all = await request('GET', `/orgs/${orgId}/runs`, { cookie });
    assert.equal(all.status, 200);
    assert.ok(all.body.indexOf(second.id) < all.body.indexOf(first.id), 'newest first');
    assert.ok(all.body.includes('&lt;script>alert(1)&lt;/script>'));
    assert.ok(!all.body.includes('<script>alert(1)'));
    assert.ok(all.body.includes('first &quot;quoted&quot; &lt;b>run&lt;/b>'));

    const waiting = await request('GET', `/orgs/${orgId}/runs?status=WAITING_FOR_APPROVAL`, { cookie });
    assert.ok(waiting.body.includes(second.id));
    assert.ok(!waiting.body.includes(first.id));
    assert.match(waiting.body, /aria-current="page"[^>]*>Needs approval|href="[^"]*status=WAITING_FOR_APPROVAL[^"]*" aria-current="page"/);

    const byStack = await request('GET', `/orgs/${orgId}/runs?stackId=${hostile.id}`, { cookie });
    assert.ok(byStack.body.includes(first.id));
    assert.ok(!byStack.body.includes(second.id));

    const environmentId = (await t.call('GET', `/stacks/${hostile.id}`)).body.data.environmentId;
    assert.ok(all.body.includes(`<option value="${environmentId}">`), 'the environments are offered');
    const byEnvironment = await request('GET', `/orgs/${orgId}/runs?environmentId=${environmentId}&status=`, { cookie });
    assert.equal(byEnvironment.status, 200);
    assert.ok(byEnvironment.body.includes(first.id));
    assert.ok(!byEnvironment.body.includes(second.id));
    assert.ok(byEnvironment.body.includes(`<option value="${environmentId}" selected>`));
    const me = (await t.call('GET', '/auth/whoami')).body.data.userId;
    const mine = await request('GET', `/orgs/${orgId}/runs?createdById=${me}`, { cookie });
    assert.ok(mine.body.includes(first.id) && mine.body.includes(second.id));
    const someoneElse = await request('GET', `/orgs/${orgId}/runs?createdById=0196a3c2e8a17b2c8d9e0f1a2b3c4d5e`, { cookie });
    assert.match(someoneElse.body, /No runs match/);

    // Any member can be picked as who started the runs; each run says who did, linking that filter.
    const member = await userCaller(t, 'inbox-starter@example.com', 'MEMBER');
    const theirs = await triggerRun(t, hostile.id, { description: 'started by a member' }, member.token);
    await waitForRunStatus(t, theirs.id, 'SUCCEEDED');
    const picker = (await request('GET', `/orgs/${orgId}/runs`, { cookie })).body;
    assert.ok(picker.includes(`<option value="${member.userId}">inbox-starter@example.com</option>`), 'members are offered');
    assert.ok(picker.includes(`href="/orgs/${orgId}/runs?createdById=${member.userId}">inbox-starter@example.com</a>`));
    const byMember = await request('GET', `/orgs/${orgId}/runs?createdById=${member.userId}`, { cookie });
    assert.ok(byMember.body.includes(theirs.id) && !byMember.body.includes(first.id));
    assert.ok(byMember.body.includes(`<option value="${member.userId}" selected>`));
  });

  it('approves a waiting step from the run page, with the CSRF token, and records who did', async () => {
    const { cookie } = await signIn(t.adminToken);
    const stack = await createStack(t, [
      { id: 'approve', type: 'approval', message: 'Check the staging smoke tests first' },
      { id: 'after', command: 'true', needs: ['approve'] },
    ]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');

    const pageUrl = `/orgs/${orgId}/runs/${run.id}`;
    const page = await request('GET', pageUrl, { cookie });
    assert.equal(page.status, 200);
    assert.match(page.body, /Approve approve/);
    assert.match(page.body, /Check the staging smoke tests first/, "the approval step's message is shown while it waits");
    assert.match(page.body, /Cancel run/);
    const approveUrl = `/orgs/${orgId}/steps/${step.id}/approve?run=${run.id}`;
    assert.ok(page.body.includes(approveUrl.replace('?', '?').replaceAll('&', '&amp;')));

    const forged = await request('POST', approveUrl, { cookie, form: { _csrf: 'not-the-token' } });
    assert.equal(forged.status, 403);
    assert.match(forged.body, /Auth:Csrf:INVALID/);
    const withoutCookie = await request('POST', approveUrl, { form: { _csrf: csrfOf(page.body) } });
    assert.equal(withoutCookie.location, '/sign-in');
    assert.equal((await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL')).status, 'WAITING_FOR_APPROVAL');

    const approved = await request('POST', approveUrl, { cookie, form: { _csrf: csrfOf(page.body) } });
    assert.equal(approved.status, 303);
    assert.equal(approved.location, pageUrl);
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    const after = await request('GET', pageUrl, { cookie });
    assert.doesNotMatch(after.body, /Approve approve|Cancel run/);
    assert.match(after.body, /Approved by you <time datetime="[^"]+" title="[^"]+">/, 'who approved, and when');
    // Another member reads the approver's email, not an id.
    const viewer = await userCaller(t, 'approval-reader@example.com', 'VIEWER');
    const seen = await request('GET', pageUrl, { cookie: (await signIn(viewer.token)).cookie });
    const admin = (await t.call('GET', '/auth/whoami')).body.data;
    assert.match(seen.body, new RegExp(`Approved by ${(admin.fullName || admin.email).replace('.', '\\.')}`));
    const audit = await t.call('GET', '/audit-events?limit=200');
    assert.ok(JSON.stringify(audit.body).includes(step.id), 'the approval went through the API, audit log included');
  });

  it("draws the run as its pipeline graph with each step's status, and shows its commit, trigger and inputs", async () => {
    const { cookie } = await signIn(t.adminToken);
    const stack = await createStack(t, [
      { id: 'build', command: 'true' },
      { id: 'test', command: 'true', needs: ['build'] },
      { id: 'lint', command: 'true', needs: ['build'] },
      { id: 'approve', type: 'approval', needs: ['test', 'lint'] },
    ]);
    const run = await triggerRun(t, stack.id, { inputs: { region: 'eu-west-1', '<b>': '</pre>' } });
    await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const page = await request('GET', `/orgs/${orgId}/runs/${run.id}`, { cookie });
    const svg = /<svg[\s\S]*<\/svg>/.exec(page.body)![0];
    const boxes = [...svg.matchAll(/<g class="node status-(\w+)" transform="translate\((\d+),(\d+)\)"><title>([^:]+):/g)].map((m) => ({
      status: m[1],
      x: Number(m[2]),
      y: Number(m[3]),
      name: m[4],
    }));
    assert.deepEqual(
      boxes.map((b) => `${b.name} ${b.status}`),
      ['build SUCCEEDED', 'test SUCCEEDED', 'lint SUCCEEDED', 'approve WAITING_FOR_APPROVAL'],
    );
    const x = Object.fromEntries(boxes.map((b) => [b.name, b.x]));
    assert.ok(x.build < x.test && x.test === x.lint && x.lint < x.approve, 'columns follow the needs');
    assert.equal([...svg.matchAll(/<path class="edge"/g)].length, 4);
    assert.match(page.body, /<figcaption id="dag-caption"[^>]*>The pipeline's steps in the order they need each other: build succeeded, test succeeded/);
    assert.match(page.body, /<dt>Trigger<\/dt><dd>started by hand<span class="muted"> · by you<\/span>/);
    assert.ok(page.body.includes('&quot;region&quot;: &quot;eu-west-1&quot;') || page.body.includes('"region": "eu-west-1"'));
    assert.ok(page.body.includes('&lt;/pre>'), 'inputs are text');
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
  });

  it("keeps a stack page's recent runs live: a run started elsewhere arrives through its stream, and nothing before", async () => {
    const { cookie } = await signIn(t.adminToken);
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const first = await triggerRun(t, stack.id);
    const pageUrl = `/orgs/${orgId}/stacks/${stack.id}`;
    const page = await request('GET', pageUrl, { cookie });
    assert.ok(page.body.includes(first.id));
    const shown = new RegExp(`sse-connect="${pageUrl}/live\\?v=([\\w-]+)"`).exec(page.body)?.[1];
    assert.ok(shown, 'the recent runs are live, from the version the page shows');
    let second: { id: string } | undefined;
    const runLinks = (html: string) => html.match(/href="\/orgs\/[^/]+\/runs\/\w+"/g)?.length ?? 0;
    const live = await readConsoleEvents(`${baseUrl}${pageUrl}/live?v=${shown}`, cookie!, (e) => runLinks(e.data) === 2, {
      onOpen: async () => {
        second = await triggerRun(t, stack.id);
      },
    });
    const runs = live.events.filter((e) => e.event === 'runs');
    assert.ok(runs.length >= 1 && !runs.some((e) => e.id === shown), 'only versions the page does not show are sent');
    assert.ok(runs.at(-1)!.data.indexOf(second!.id) < runs.at(-1)!.data.indexOf(first.id), 'newest first');
    for (const id of [first.id, second!.id]) await t.call('POST', `/pipeline-runs/${id}/cancel`);
    await waitForRunStatus(t, second!.id, 'CANCELLED');

    // A stack deleted while its page is open ends the stream with `done`, which closes it in the browser
    // (an error answer would have it reconnect for as long as the page stays open); so does a page
    // opened again after that.
    const gone = await readConsoleEvents(`${baseUrl}${pageUrl}/live`, cookie!, () => false, {
      onOpen: async () => {
        const deleted = await t.call('DELETE', `/stacks/${stack.id}`);
        assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
      },
    });
    assert.equal(gone.events.at(-1)?.event, 'done', gone.raw);
    const reopened = await readConsoleEvents(`${baseUrl}${pageUrl}/live`, cookie!, () => false);
    assert.deepEqual(
      reopened.events.map((e) => e.event),
      ['done'],
    );
    assert.equal((await request('GET', `${pageUrl}/live?v=a%0Adata:x`, { cookie })).status, 400, 'a version is a digest, not text to echo');
  });

  it('keeps the first page of a filtered inbox live: a new run arrives through its event stream', async () => {
    const { cookie } = await signIn(t.adminToken);
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const first = await triggerRun(t, stack.id);
    const inboxUrl = `/orgs/${orgId}/runs?stackId=${stack.id}`;
    const liveUrl = `/orgs/${orgId}/runs/live?stackId=${stack.id}`;
    const page = await request('GET', inboxUrl, { cookie });
    assert.ok(page.body.includes(`sse-connect="${liveUrl}&amp;v=`), 'the first page is live, from the version it shows');

    let second: { id: string } | undefined;
    let signedOut: Promise<unknown> | undefined;
    const live = await readEvents(liveUrl, cookie!, (event) => {
      if (event.event !== 'runs') return;
      if (!second) {
        assert.ok(event.data.includes(first.id));
        second = { id: '' };
        void triggerRun(t, stack.id).then((run) => {
          second = run;
        });
      } else if (second.id && event.data.includes(second.id) && !signedOut) {
        // The stream ends with the session.
        signedOut = request('POST', '/sign-out', { cookie, form: { _csrf: csrfOf(page.body) } });
      }
    });
    assert.equal(live.status, 200);
    await signedOut;
    const runsEvents = live.events.filter((e) => e.event === 'runs');
    assert.ok(runsEvents.length >= 2);
    assert.ok(runsEvents.at(-1)!.data.indexOf(second!.id) < runsEvents.at(-1)!.data.indexOf(first.id), 'newest first');
    assert.equal(new Set(runsEvents.map((e) => e.id)).size, runsEvents.length, 'every event is a new version');
    const cursor = (await t.call('GET', `/pipeline-runs?stackId=${stack.id}&order=desc&limit=1`)).body.meta.nextCursor;
    const older = await request('GET', `${inboxUrl}&cursor=${encodeURIComponent(cursor)}`, { cookie: (await signIn(t.adminToken)).cookie });
    assert.equal(older.status, 200);
    assert.ok(older.body.includes(first.id) && !older.body.includes(second!.id));
    assert.doesNotMatch(older.body, /sse-connect/, 'an older page is not live');
    const session = (await signIn(t.adminToken)).cookie;
    const byRef = await request('GET', `/orgs/${orgId}/runs?stackId=${stack.id}&ref=release%2F1&commitSha=`, { cookie: session });
    assert.match(byRef.body, /No runs match/, 'the stack tracks no branch');
    assert.match(byRef.body, /<input id="ref-filter" type="text" name="ref" value="release\/1"/);
    assert.equal((await request('GET', `/orgs/${orgId}/runs?commitSha=XYZ`, { cookie: session })).status, 400);
    for (const id of [first.id, second!.id]) await t.call('POST', `/pipeline-runs/${id}/cancel`);
  });

  it('answers the command palette with stacks and environments by part of their name, and a run by its id', async () => {
    const { cookie } = await signIn(t.adminToken);
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const name = (await t.call('GET', `/stacks/${stack.id}`)).body.data.name as string;
    const run = await triggerRun(t, stack.id);
    const palette = (q: string) => request('GET', `/orgs/${orgId}/palette?q=${encodeURIComponent(q)}`, { cookie });
    const byName = await palette(name.toUpperCase());
    assert.ok(byName.body.includes(`href="/orgs/${orgId}/stacks/${stack.id}"`), byName.body);
    assert.equal(
      (await t.call('GET', `/stacks?search=${encodeURIComponent(name.slice(1).toLowerCase())}&limit=200`)).body.data.filter(
        (s: { id: string }) => s.id === stack.id,
      ).length,
      1,
    );
    const env = (await t.call('GET', `/stacks/${stack.id}`)).body.data.environmentId;
    const envName = (await t.call('GET', `/environments/${env}`)).body.data.name as string;
    assert.ok((await palette(envName)).body.includes(`/stacks?environmentId=${env}`));
    const byRun = await palette(run.id);
    assert.ok(byRun.body.includes(`href="/orgs/${orgId}/runs/${run.id}"`));
    assert.match((await palette('no-such-thing-anywhere')).body, /Nothing matches/);
    assert.match((await palette('stac')).body, /<span class="muted">Page<\/span> Stacks/);
    assert.equal((await palette('')).body, '');
    assert.equal((await palette('x'.repeat(101))).status, 400);
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
  });

  it('keeps the theme a reader chose in a cookie, and comes back only to a path of this site', async () => {
    const { cookie } = await signIn(t.adminToken);
    const page = await request('GET', `/orgs/${orgId}/stacks`, { cookie });
    assert.match(page.body, /^<!doctype html><html lang="en">/, 'the system theme by default');
    const chosen = await request('POST', '/preferences/theme', { cookie, form: { _csrf: csrfOf(page.body), theme: 'dark', back: `/orgs/${orgId}/stacks` } });
    assert.equal(chosen.status, 303);
    assert.equal(chosen.location, `/orgs/${orgId}/stacks`);
    const theme = chosen.cookies.find((c) => c.name === 'plinth_theme')!;
    assert.equal(theme.value, 'dark');
    const dark = await request('GET', `/orgs/${orgId}/stacks`, { cookie: `${cookie}; plinth_theme=dark` });
    assert.match(dark.body, /<html lang="en" data-theme="dark">/);
    assert.match((await request('GET', '/sign-in', { cookie: 'plinth_theme=light' })).body, /data-theme="light"/);
    assert.doesNotMatch((await request('GET', '/sign-in', { cookie: 'plinth_theme=%22%3E%3Cscript%3E' })).body, /data-theme/);
    for (const back of ['//evil.example/x', '/\\evil.example', 'https://evil.example/', '/\t/evil.example', '/\u0001', '/caf\u00e9', '/a b']) {
      const res = await request('POST', '/preferences/theme', { cookie, form: { _csrf: csrfOf(page.body), theme: 'light', back } });
      assert.equal(res.location, '/', back);
    }
    assert.equal((await request('POST', '/preferences/theme', { cookie, form: { theme: 'dark' } })).status, 403, 'a signed-in form needs its token');
    assert.equal((await request('POST', '/preferences/theme', { form: { theme: 'dark', back: '/sign-in' } })).location, '/sign-in');
    assert.equal((await request('POST', '/preferences/theme', { form: { theme: 'neon' } })).status, 400);
  });

  it("opens a run page's stream from the version the page shows, sending only what changes until the run finishes", async () => {
    const { cookie } = await signIn(t.adminToken);
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const pageUrl = `/orgs/${orgId}/runs/${run.id}`;
    const liveUrl = `${pageUrl}/live`;
    const page = await request('GET', pageUrl, { cookie });
    const shown = new RegExp(`sse-connect="${liveUrl}\\?v=([\\w-]+)"`).exec(page.body)![1];

    // Opened with the version the page shows, the stream sends nothing until the run changes.
    const reading = readEvents(`${liveUrl}?v=${shown}`, cookie!, () => {});
    assert.equal((await t.call('POST', `/pipeline-step-executions/${step.id}/approve`)).status, 200);
    const fromPage = await reading;
    assert.equal(fromPage.status, 200);
    for (const event of fromPage.events) assert.doesNotMatch(event.data, /Approve approve/, 'nothing the page already shows');
    assert.equal(fromPage.events.at(-1)?.event, 'done');
  });

  it("sends a run page's body at once to a stream opened without a version, then each change, and resumes without repeats", async () => {
    const { cookie } = await signIn(t.adminToken);
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const pageUrl = `/orgs/${orgId}/runs/${run.id}`;
    const liveUrl = `${pageUrl}/live`;
    let approval: Promise<unknown> | undefined;
    const live = await readEvents(liveUrl, cookie!, (event) => {
      if (event.event === 'run' && !approval) approval = t.call('POST', `/pipeline-step-executions/${step.id}/approve`);
    });
    assert.equal(live.status, 200);
    assert.equal(((await approval) as { status: number }).status, 200);
    const [first, ...rest] = live.events;
    assert.equal(first.event, 'run');
    assert.match(first.data, /Approve approve/);
    assert.match(first.data, /waiting for approval/);
    const finished = rest.find((e) => e.event === 'run' && /succeeded/.test(e.data));
    assert.ok(finished, JSON.stringify(live.events.map((e) => e.event)));
    assert.doesNotMatch(finished.data, /Approve approve/);
    assert.equal(live.events.at(-1)?.event, 'done');

    const resumed = await readEvents(liveUrl, cookie!, () => {}, live.events.at(-1)?.id);
    assert.deepEqual(
      resumed.events.map((e) => e.event),
      ['done'],
      'a page that has the latest version gets nothing again',
    );
    assert.doesNotMatch((await request('GET', pageUrl, { cookie })).body, /sse-connect/, 'a finished run opens no stream');
    assert.equal((await request('GET', liveUrl)).location, '/sign-in', 'no stream without a session');
  });

  it('ends a live stream when its session ends, and keeps a CR in tenant text from breaking its framing', async () => {
    const { cookie } = await signIn(t.adminToken);
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id, { description: 'x\r\revent: done\rdata: spoofed\r' });
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const liveUrl = `/orgs/${orgId}/runs/${run.id}/live`;
    const page = await request('GET', `/orgs/${orgId}/runs/${run.id}`, { cookie });
    let signedOut: Promise<unknown> | undefined;
    const live = await readEvents(liveUrl, cookie!, () => {
      signedOut ??= request('POST', '/sign-out', { cookie, form: { _csrf: csrfOf(page.body) } });
    });
    await signedOut;
    assert.deepEqual(
      live.events.map((e) => e.event),
      ['run'],
      'the stream ended with the session, before the run did',
    );
    assert.ok(!live.raw.includes('\r'), 'no bare CR reaches the stream');
    assert.match(live.events[0].data, /event: done/, 'the text stays data');
    await t.call('POST', `/pipeline-step-executions/${step.id}/reject`);
  });

  it('refuses forms from another site, ids that would move the API path, and a session whose key cannot be opened', async () => {
    const { cookie } = await signIn(t.adminToken);
    const page = await request('GET', `/orgs/${orgId}/runs`, { cookie });
    const csrf = csrfOf(page.body);
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    const cancel = `/orgs/${orgId}/runs/${run.id}/cancel`;
    const foreign: Record<string, string>[] = [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }, { origin: 'null' }];
    for (const headers of foreign) {
      const res = await request('POST', cancel, { cookie, form: { _csrf: csrf }, headers });
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.match(res.body, /Auth:Csrf:INVALID/);
    }
    const sameSite = await request('POST', cancel, {
      cookie,
      form: { _csrf: csrf },
      headers: { 'sec-fetch-site': 'same-origin', origin: 'http://localhost:80' },
    });
    assert.equal(sameSite.status, 303);

    for (const url of [`/orgs/${orgId}/runs/%2E%2E`, `/orgs/${orgId}/runs/..%2F..%2Fapi-keys`, `/orgs/${orgId}/runs?stackId=..`, '/orgs/../runs']) {
      const res = await request('GET', url, { cookie });
      assert.ok(res.status === 400 || res.status === 404, `${url}: ${res.status}`);
    }

    const tokenHash = createHash('sha256').update(cookie!.split('=')[1]).digest('hex');
    await sql`update console_sessions set sealed_key = 'v1.nokey.AAAA' where token_hash = ${tokenHash}`.execute(t.db);
    const broken = await request('GET', `/orgs/${orgId}/runs`, { cookie });
    assert.equal(broken.location, '/sign-in');
    const left = await sql<{ n: number }>`select count(*)::int as n from console_sessions where token_hash = ${tokenHash}`.execute(t.db);
    assert.equal(left.rows[0].n, 0, 'a session whose key cannot be opened is gone');
  });

  it('shows a VIEWER no button that would fail, and the API refuses the action anyway', async () => {
    const viewer = await userCaller(t, 'viewer-console@example.com', 'VIEWER');
    const { cookie } = await signIn(viewer.token);
    assert.ok(cookie);
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const page = await request('GET', `/orgs/${orgId}/runs/${run.id}`, { cookie });
    assert.equal(page.status, 200);
    assert.match(page.body, /viewer/);
    assert.doesNotMatch(page.body, /Approve|Reject|Cancel run|Retry run/);
    const attempt = await request('POST', `/orgs/${orgId}/steps/${step.id}/approve?run=${run.id}`, { cookie, form: { _csrf: csrfOf(page.body) } });
    assert.equal(attempt.status, 403);
    assert.match(attempt.body, /Auth:Permission:DENIED/);
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
  });

  it('ends a session on sign-out, everywhere when asked, and when its key is revoked', async () => {
    const one = await signIn(t.adminToken);
    const two = await signIn(t.adminToken);
    const page = await request('GET', `/orgs/${orgId}/runs`, { cookie: one.cookie });
    const out = await request('POST', '/sign-out', { cookie: one.cookie, form: { _csrf: csrfOf(page.body) } });
    assert.equal(out.location, '/sign-in');
    assert.equal((await request('GET', `/orgs/${orgId}/runs`, { cookie: one.cookie })).location, '/sign-in', 'a copied cookie no longer works');
    assert.equal((await request('GET', `/orgs/${orgId}/runs`, { cookie: two.cookie })).status, 200, 'another session goes on');

    const three = await signIn(t.adminToken);
    const threePage = await request('GET', `/orgs/${orgId}/runs`, { cookie: three.cookie });
    const everywhere = await request('POST', '/sign-out', { cookie: three.cookie, form: { _csrf: csrfOf(threePage.body), everywhere: 'yes' } });
    assert.equal(everywhere.location, '/sign-in');
    assert.equal((await request('GET', `/orgs/${orgId}/runs`, { cookie: two.cookie })).location, '/sign-in');

    const member = await userCaller(t, 'revoked-console@example.com', 'MEMBER');
    const session = await signIn(member.token);
    assert.equal((await request('GET', `/orgs/${orgId}/runs`, { cookie: session.cookie })).status, 200);
    const keys = await t.call('GET', '/api-keys?limit=200', { token: member.token });
    const key = keys.body.data.find((k: { userId?: string }) => k.userId === member.userId);
    assert.equal((await t.call('DELETE', `/api-keys/${key.id}`, { token: member.token })).status, 204);
    assert.equal((await request('GET', `/orgs/${orgId}/runs`, { cookie: session.cookie })).location, '/sign-in');
  });

  it('ends a session left idle, and one past its absolute lifetime however busy', async () => {
    const idle = await signIn(t.adminToken);
    await sql`update console_sessions set last_seen_at = now() - interval '3 hours'`.execute(t.db);
    assert.equal((await request('GET', `/orgs/${orgId}/runs`, { cookie: idle.cookie })).location, '/sign-in');
    const old = await signIn(t.adminToken);
    assert.equal((await request('GET', `/orgs/${orgId}/runs`, { cookie: old.cookie })).status, 200);
    await sql`update console_sessions set expires_at = now() - interval '1 second'`.execute(t.db);
    assert.equal((await request('GET', `/orgs/${orgId}/runs`, { cookie: old.cookie })).location, '/sign-in');
  });

  it('serves its assets under a content hash with long cache headers, and nothing else from their directories', async () => {
    const form = await request('GET', '/sign-in');
    const css = /href="(\/assets\/[0-9a-f]{16}\/console\.css)"/.exec(form.body)![1];
    const js = /src="(\/assets\/[0-9a-f]{16}\/htmx\.min\.js)"/.exec(form.body)![1];
    for (const url of [css, js]) {
      const res = await request('GET', url);
      assert.equal(res.status, 200, url);
      assert.match(String(res.headers['cache-control']), /max-age=31536000.*immutable|immutable.*max-age=31536000/);
    }
    assert.match(String((await request('GET', js)).headers['content-type']), /javascript/);
    const version = css.split('/')[2];
    assert.equal((await request('GET', `/assets/${version}/package.json`)).status, 404);
    assert.equal((await request('GET', `/assets/${version}/..%2f..%2fpackage.json`)).status, 404);
    assert.equal((await request('GET', '/assets/0000000000000000/console.css')).status, 404);
  });

  it('shows an error page for a run that does not exist, and an organization the key is not in', async () => {
    const { cookie } = await signIn(t.adminToken);
    const missing = await request('GET', `/orgs/${orgId}/runs/0196a3c7e1f07a2b9c3d4e5f60718293`, { cookie });
    assert.equal(missing.status, 404);
    assert.match(missing.body, /Api:PipelineRun:NOT_FOUND|not found/);
    const viewer = await userCaller(t, 'one-org@example.com', 'VIEWER');
    const session = await signIn(viewer.token);
    const elsewhere = await request('GET', '/orgs/some-other-org/runs', { cookie: session.cookie });
    assert.equal(elsewhere.status, 403);
  });
});
