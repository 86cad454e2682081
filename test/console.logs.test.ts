import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { consoleBrowser } from './helpers/console.ts';
import { createStack, startEngineTestApp, stepsOf, triggerRun, waitForRunStatus, waitForStep, type EngineTestApp } from './helpers/engine.ts';

/** The values of `attribute` in `html`, in order, unescaped (but the command palette's, on every page). */
const attributeValues = (html: string, attribute: string) =>
  [...html.matchAll(new RegExp(`${attribute}="([^"]*)"`, 'g'))].map((m) => m[1].replaceAll('&amp;', '&')).filter((value) => !value.endsWith('/palette'));

describe('the console log viewer', () => {
  let t: EngineTestApp;
  let orgId: string;
  let cookie: string;
  let stepId: string;
  let runId: string;
  const { request, signIn } = consoleBrowser(() => t.app);

  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    cookie = (await signIn(t.adminToken)).cookie!;
    // A line on stderr (first, and alone for a while: the order of two pipes' lines written at once is
    // the order they are read in), colours, a hostile line, 2,500 numbered lines, an end without a newline.
    const command = [
      `echo 'Needle on stderr' >&2`,
      'sleep 1',
      `printf '\\033[1;31mred alert\\033[0m plain\\n<script>alert(1)</script>\\n'`,
      `i=1; while [ $i -le 2500 ]; do echo "line $i"; i=$((i+1)); done`,
      `printf 'no newline'`,
    ].join('; ');
    const stack = await createStack(t, [{ id: 'build', command }]);
    runId = (await triggerRun(t, stack.id)).id;
    await waitForRunStatus(t, runId, 'SUCCEEDED');
    stepId = (await stepsOf(t, runId))[0].id;
  });
  after(async () => t?.close());

  const logUrl = () => `/orgs/${orgId}/steps/${stepId}/logs`;

  it('renders a page of lines with anchors and terminal colours as classes, escaping what the step wrote', async () => {
    const page = await request('GET', logUrl(), { cookie });
    assert.equal(page.status, 200);
    assert.match(page.body, /<div class="log-line log-stderr" id="L1" data-seq="1"><a class="ln" href="#L1" tabindex="-1">1<\/a><span class="lt">Needle/);
    assert.match(page.body, /<span class="a-fg1 a-b">red alert<\/span> plain/);
    assert.ok(page.body.includes('&lt;script>alert(1)&lt;/script>'), 'the hostile line is text');
    assert.doesNotMatch(page.body, /<script>alert/);
    assert.doesNotMatch(page.body, /\x1b/);
    // One chunk of 1,000 lines, then the next one, loaded when the reader reaches it.
    assert.match(page.body, /id="L1000"/);
    assert.doesNotMatch(page.body, /id="L1001"/);
    const next = attributeValues(page.body, 'hx-get');
    assert.deepEqual(next, [`/orgs/${orgId}/steps/${stepId}/log-lines?after=1000&view=window&chunk=2`]);
    assert.match(page.body, /hx-trigger="intersect once"/);

    const chunk = await request('GET', next[0], { cookie });
    assert.equal(chunk.status, 200);
    assert.match(chunk.body, /^<div class="log-line log-stdout" id="L1001"/);
    assert.match(chunk.body, /id="L2000"/);
    assert.deepEqual(attributeValues(chunk.body, 'hx-get'), [`/orgs/${orgId}/steps/${stepId}/log-lines?after=2000&view=window&chunk=3`]);

    const last = await request('GET', `/orgs/${orgId}/steps/${stepId}/log-lines?after=2000&view=window&chunk=3`, { cookie });
    assert.match(last.body, /id="L2504"[\s\S]*no newline/);
    assert.match(last.body, /End of the log/);
    assert.deepEqual(attributeValues(last.body, 'hx-get'), [], 'nothing more is asked for once the step has ended');
  });

  it('opens at a line, and stops a window at 20 chunks with a link that goes on', async () => {
    const page = await request('GET', `${logUrl()}?after=2490`, { cookie });
    assert.match(page.body, /data-after="2490"[\s\S]*id="L2491"/);
    assert.doesNotMatch(page.body, /id="L2490"/);
    const tail = await request('GET', `${logUrl()}?tail=3`, { cookie });
    assert.match(tail.body, /data-after="2501"/);
    assert.match(tail.body, /id="L2502"[\s\S]*id="L2504"[\s\S]*End of the log/);
    const twentieth = await request('GET', `/orgs/${orgId}/steps/${stepId}/log-lines?after=0&view=window&chunk=20`, { cookie });
    assert.deepEqual(attributeValues(twentieth.body, 'hx-get'), []);
    assert.match(twentieth.body, new RegExp(`href="/orgs/${orgId}/steps/${stepId}/logs\\?after=1000">Go on from line 1001`));
  });

  it('opens at a line or a range typed into "Mark lines", and refuses what is not one', async () => {
    const marked = await request('GET', `${logUrl()}?lines=${encodeURIComponent(' 140 - 120 ')}`, { cookie });
    assert.equal(marked.status, 303);
    assert.equal(marked.location, `${logUrl()}?after=99#L120-L140`);
    assert.equal((await request('GET', `${logUrl()}?lines=7`, { cookie })).location, `${logUrl()}?after=0#L7`);
    assert.equal((await request('GET', `${logUrl()}?lines=1-2-3`, { cookie })).status, 400);
    assert.match((await request('GET', logUrl(), { cookie })).body, /<label for="log-lines">Mark lines<\/label>/);
  });

  it('finds lines in the whole log, ignoring case, each linked to where it stands', async () => {
    const found = await request('GET', `${logUrl()}?q=NEEDLE`, { cookie });
    assert.equal(found.status, 200);
    assert.match(found.body, /Lines that hold “NEEDLE”/);
    const lines = [...found.body.matchAll(/data-seq="(\d+)"/g)].map((m) => Number(m[1]));
    assert.deepEqual(lines, [1]);
    assert.ok(found.body.includes(`href="${logUrl()}?after=0#L1"`), 'the line links into the log');
    const inTheMiddle = await request('GET', `${logUrl()}?q=line%202000`, { cookie });
    assert.ok(inTheMiddle.body.includes(`href="${logUrl()}?after=1982#L2003"`), 'opened a little before the line');
    assert.match(found.body, /No more lines hold it/);
    const many = await request('GET', `${logUrl()}?q=line%2012`, { cookie });
    assert.equal([...many.body.matchAll(/data-seq=/g)].length, 111, 'line 12, 120-129 and 1200-1299');

    const api = await t.call('GET', `/pipeline-step-executions/${stepId}/logs?contains=needle`);
    assert.deepEqual(
      api.body.data.map((l: { line: string }) => l.line),
      ['Needle on stderr'],
    );
    const nothing = await t.call('GET', `/pipeline-step-executions/${stepId}/logs?contains=not-in-this-log`);
    assert.deepEqual(nothing.body.data, []);
    assert.equal(nothing.body.meta.lastSeq, 2504, 'lastSeq is the last line examined, so a search goes on from there');
    assert.equal(nothing.body.meta.complete, true);
    assert.equal((await t.call('GET', `/pipeline-step-executions/${stepId}/logs?contains=x&tail=5`)).status, 400);
    assert.equal((await t.call('GET', `/pipeline-step-executions/${stepId}/logs?contains=x&follow=true`)).status, 400);
    assert.equal((await request('GET', `${logUrl()}?q=${'x'.repeat(201)}`, { cookie })).status, 400);
  });

  it('downloads the raw log: every stream in order, byte for byte', async () => {
    const raw = await request('GET', `${logUrl()}/raw`, { cookie });
    assert.equal(raw.status, 200);
    assert.match(String(raw.headers['content-disposition']), new RegExp(`attachment; filename="step-${stepId}.log"`));
    assert.match(String(raw.headers['content-type']), /^text\/plain/);
    const numbered = Array.from({ length: 2500 }, (_, i) => `line ${i + 1}\n`).join('');
    assert.equal(raw.body, `Needle on stderr\n\x1b[1;31mred alert\x1b[0m plain\n<script>alert(1)</script>\n${numbered}no newline`);
  });

  it('shows each step of a run as a collapsible log, the failed one open, and follows a running step', async () => {
    const stack = await createStack(t, [
      { id: 'fails', command: 'echo oops; exit 3' },
      { id: 'never', command: 'true', needs: ['fails'] },
    ]);
    const failed = (await triggerRun(t, stack.id)).id;
    await waitForRunStatus(t, failed, 'FAILED');
    const page = await request('GET', `/orgs/${orgId}/runs/${failed}`, { cookie });
    const details = [...page.body.matchAll(/<details id="log-\w+" hx-preserve="true" class="step-log"( open)?><summary>(\w+)/g)].map((m) => [
      m[2],
      Boolean(m[1]),
    ]);
    assert.deepEqual(details, [
      ['fails', true],
      ['never', false],
    ]);
    const failedStep = (await stepsOf(t, failed)).find((s) => s.stepId === 'fails');
    const embedUrl = `/orgs/${orgId}/steps/${failedStep.id}/log-lines?after=0&view=embed&chunk=1`;
    assert.ok(attributeValues(page.body, 'hx-get').includes(embedUrl));
    const embedded = await request('GET', embedUrl, { cookie });
    assert.match(embedded.body, /oops/);
    assert.doesNotMatch(embedded.body, / id="L1"/, 'no anchors on the run page, where several logs share the page');
    assert.ok(embedded.body.includes(`href="/orgs/${orgId}/steps/${failedStep.id}/logs?after=0#L1"`));

    const waiting = await createStack(t, [{ id: 'gate', type: 'approval' }]);
    const waitingRun = (await triggerRun(t, waiting.id)).id;
    const gate = await waitForStep(t, waitingRun, 'gate', 'WAITING_FOR_APPROVAL');
    const live = await request('GET', `/orgs/${orgId}/steps/${gate.id}/log-lines?after=0&view=embed&chunk=1`, { cookie });
    assert.match(live.body, /Waiting for more output/);
    assert.match(live.body, /hx-trigger="load delay:2s"/);
    assert.deepEqual(attributeValues(live.body, 'hx-get'), [`/orgs/${orgId}/steps/${gate.id}/log-lines?after=0&view=embed&chunk=2`]);
  });

  it('asks a browser without a session to sign in, and refuses ids that would move the API path', async () => {
    assert.equal((await request('GET', logUrl())).location, '/sign-in');
    assert.equal((await request('GET', `/orgs/${orgId}/steps/..%2F..%2Fauth/logs`, { cookie })).status, 400);
    assert.equal((await request('GET', `/orgs/${orgId}/steps/${stepId}/log-lines?after=0&view=other&chunk=1`, { cookie })).status, 400);
    assert.equal((await request('GET', `/orgs/${orgId}/steps/0196a3c7e1f07a2b9c3d4e5f60718293/logs`, { cookie })).status, 404);
  });
});
