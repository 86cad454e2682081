// The web console in a real browser: Debian's Chromium driven by playwright-core. Where no Chromium can
// be found (PLINTH_CHROMIUM, else chromium on PATH), these tests are skipped with a message saying how
// to install it; .ci/run installs it. With CONSOLE_SCREENSHOTS set to a directory, the main pages are
// saved there as PNG files (docs/console/ holds the ones docs/console.md shows).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { OAuth2Server } from 'oauth2-mock-server';
import { chromium, type Browser, type Page } from 'playwright-core';
import { userCaller } from './helpers/callers.ts';
import { startGitServer } from './helpers/git-server.ts';
import { commitModules, publishModule } from './helpers/modules.ts';
import { createStack, LOOPBACK_GIT_ENV, triggerRun, waitForRunStatus, waitForStep } from './helpers/engine.ts';
import { createTofuStack, stackCode, startTofuTestApp, startTofuWorker, type TofuTestApp } from './helpers/opentofu.ts';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS;

function findChromium(): string | undefined {
  if (process.env.PLINTH_CHROMIUM) return process.env.PLINTH_CHROMIUM;
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim() || undefined;
    } catch {}
  }
  return undefined;
}

// The module pages' test publishes modules from a Git server on loopback.
Object.assign(process.env, LOOPBACK_GIT_ENV);

const executablePath = findChromium();
const skip = executablePath ? false : "no Chromium found: install Debian's chromium package (apt-get install chromium) or set PLINTH_CHROMIUM";

describe('the web console in a real browser', { skip }, () => {
  let t: TofuTestApp;
  const tofuCode = stackCode({
    variables: { name: {}, password: { sensitive: true } },
    resources: {
      'standin_network.main': { attributes: { name: '${var.name}', cidr: '10.0.0.0/16' } },
      'standin_login.admin': { attributes: { user: 'admin', password: '${var.password}' } },
    },
  });
  let browser: Browser;
  let baseUrl: string;
  let orgId: string;

  before(async () => {
    // One worker runs both the script steps and the OpenTofu stand-in's (unsandboxed: see stackCode).
    t = await startTofuTestApp();
    await startTofuWorker(t, tofuCode);
    baseUrl = t.baseUrl;
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    // Chromium's own sandbox needs privileges a root CI user or a container lacks; the pages are ours.
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A fresh browser context (its own cookies), with every CSP violation and page error collected. */
  const newPage = async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    return { page, problems };
  };

  const signIn = async (page: Page, apiKey: string) => {
    await page.goto(baseUrl);
    assert.match(page.url(), /\/sign-in$/);
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/orgs\/[^/]+\/runs$/);
  };

  /** axe-core's violations of impact serious or critical on the current page. */
  const seriousViolations = async (page: Page) => {
    // Evaluated through the DevTools protocol, which the page's CSP does not govern (an injected <script> it would refuse).
    await page.evaluate(AXE_SOURCE);
    const violations = await page.evaluate(async () => (await (globalThis as any).axe.run(document)).violations);
    return (violations as { id: string; impact: string; nodes: { target: string[] }[] }[])
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  };

  /** Saves the page (or only what the window shows, for a page as long as a log) when CONSOLE_SCREENSHOTS asks. */
  const screenshot = async (page: Page, name: string, fullPage = true) => {
    if (!SCREENSHOTS) return;
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage });
  };

  it('signs in with the admin token, filters the inbox, approves a run from its page, and signs out', async () => {
    const passing = await createStack(t, [{ id: 'build', command: 'echo built' }]);
    const done = await triggerRun(t, passing.id, { description: 'Build the site' });
    await waitForRunStatus(t, done.id, 'SUCCEEDED');
    const gated = await createStack(t, [
      { id: 'plan', command: 'echo planned' },
      { id: 'approve', type: 'approval', needs: ['plan'] },
      { id: 'apply', command: 'echo applied', needs: ['approve'] },
    ]);
    const run = await triggerRun(t, gated.id, { description: 'Scale to two instances' });
    await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');

    const { page, problems } = await newPage();
    await page.goto(`${baseUrl}/sign-in`);
    await screenshot(page, 'sign-in');
    assert.deepEqual(await seriousViolations(page), [], 'sign-in page');
    await signIn(page, t.adminToken);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Runs');
    await screenshot(page, 'runs-inbox');
    assert.deepEqual(await seriousViolations(page), [], 'runs inbox');

    await page.getByRole('link', { name: 'Needs approval' }).click();
    await page.waitForURL(/status=WAITING_FOR_APPROVAL/);
    // The form's filters keep the status link's, and land in the URL to share.
    const gatedEnvironment = (await t.call('GET', `/stacks/${gated.id}`)).body.data.environmentId;
    await page.getByLabel('Environment', { exact: true }).selectOption(gatedEnvironment);
    await page.getByLabel('Started by', { exact: true }).selectOption({ label: 'admin@localhost (you)' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(
      new RegExp(`status=WAITING_FOR_APPROVAL.*environmentId=${gatedEnvironment}.*createdById=|createdById=.*environmentId=${gatedEnvironment}`),
    );
    await page.locator(`a[href$="/runs/${run.id}"]`).waitFor();
    const runLink = (id: string) => page.locator(`a[href$="/runs/${id}"]`);
    assert.ok(await runLink(run.id).isVisible());
    assert.equal(await runLink(done.id).count(), 0);

    await runLink(run.id).click();
    await page.waitForURL(new RegExp(`/runs/${run.id}$`));
    await screenshot(page, 'run-waiting');
    assert.deepEqual(await seriousViolations(page), [], 'run page');
    await page.getByRole('button', { name: 'Approve approve' }).click();
    await page.waitForURL(new RegExp(`/runs/${run.id}$`));
    await waitForRunStatus(t, run.id, 'SUCCEEDED');
    await page.reload();
    assert.equal(await page.getByRole('button', { name: /Approve/ }).count(), 0);
    assert.match((await page.locator('h1').textContent()) ?? '', /succeeded/);

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(/\/sign-in$/);
    await page.goto(`${baseUrl}/orgs/${orgId}/runs`);
    assert.match(page.url(), /\/sign-in$/, 'signed out: the inbox asks to sign in again');
    assert.deepEqual(problems, [], 'no script error or CSP violation on any page');
  });

  it('moves a run page on live, without a reload, as the run is approved elsewhere', async () => {
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const { page, problems } = await newPage();
    await signIn(page, t.adminToken);
    await page.goto(`${baseUrl}/orgs/${orgId}/runs/${run.id}`);
    await page.getByRole('button', { name: 'Approve approve' }).waitFor();
    let reloaded = false;
    page.on('load', () => {
      reloaded = true;
    });
    assert.equal((await t.call('POST', `/pipeline-step-executions/${step.id}/approve`)).status, 200);
    await page.locator('h1', { hasText: 'succeeded' }).waitFor({ timeout: 15_000 });
    assert.equal(await page.getByRole('button', { name: /Approve/ }).count(), 0);
    assert.equal(reloaded, false, 'the page was updated in place');
    assert.deepEqual(problems, []);
  });

  it("streams a step's log live after an approval from the run page, and opens, marks and searches a whole log", async () => {
    const plan = `printf '\\033[32mPlan:\\033[0m 1 to add\\n'; i=2; while [ $i -le 1500 ]; do if [ $i = 900 ]; then echo marker-xyz; else echo "line $i"; fi; i=$((i+1)); done`;
    const stack = await createStack(t, [
      { id: 'plan', command: plan },
      { id: 'approve', type: 'approval', needs: ['plan'] },
      { id: 'apply', command: 'echo applying; sleep 2; echo applied-later', needs: ['approve'] },
    ]);
    const run = await triggerRun(t, stack.id);
    await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const { page, problems } = await newPage();
    await signIn(page, t.adminToken);
    await page.goto(`${baseUrl}/orgs/${orgId}/runs/${run.id}`);
    // The plan's log is collapsed; opening it reads its lines.
    const planLog = page.locator('details.step-log', { hasText: 'plan ·' });
    assert.equal(await planLog.getAttribute('open'), null);
    await planLog.locator('summary').click();
    await planLog.locator('.log-line', { hasText: '1 to add' }).waitFor();
    assert.equal(await planLog.locator('.a-fg2', { hasText: 'Plan:' }).count(), 1, 'colours rendered as classes');
    assert.deepEqual(await seriousViolations(page), [], 'run page with a log open');

    await page.getByRole('button', { name: 'Approve approve' }).click();
    await page.waitForURL(new RegExp(`/runs/${run.id}$`));
    let reloaded = false;
    page.on('load', () => {
      reloaded = true;
    });
    const applyLog = page.locator('details.step-log[open]', { hasText: 'apply ·' });
    await applyLog.locator('.log-line', { hasText: 'applying' }).waitFor({ timeout: 15_000 });
    await applyLog.locator('.log-line', { hasText: 'applied-later' }).waitFor({ timeout: 15_000 });
    await applyLog.locator('.log-end', { hasText: 'End of the log' }).waitFor({ timeout: 15_000 });
    assert.equal(reloaded, false, 'the lines came without a reload');

    // A shared range beyond the first chunk: the page opens where it is and marks it.
    const planStep = (await t.call('GET', `/pipeline-runs/${run.id}/step-executions?limit=10`)).body.data.find((s: any) => s.stepId === 'plan');
    const logUrl = `${baseUrl}/orgs/${orgId}/steps/${planStep.id}/logs`;
    await page.goto(`${logUrl}#L1200-L1203`);
    await page.waitForURL(/\?after=1179#L1200-L1203$/);
    await page.locator('#L1200.selected').waitFor();
    assert.deepEqual(await page.locator('.log-line.selected').evaluateAll((lines) => lines.map((l) => l.id)), ['L1200', 'L1201', 'L1202', 'L1203']);
    await page.locator('#L1210 a.ln').click();
    assert.match(page.url(), /#L1210$/);
    await page.locator('#L1212 a.ln').click({ modifiers: ['Shift'] });
    assert.match(page.url(), /#L1210-L1212$/);
    assert.equal(await page.locator('.log-line.selected').count(), 3);
    await screenshot(page, 'log-viewer', false);
    assert.deepEqual(await seriousViolations(page), [], 'log page');
    // The same from the keyboard: a range typed into "Mark lines".
    await page.getByLabel('Mark lines').focus();
    await page.keyboard.type('1305-1301');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\?after=1280#L1301-L1305$/);
    await page.locator('#L1301.selected').waitFor();
    assert.equal(await page.locator('.log-line.selected').count(), 5);

    await page.getByLabel('Find in log').fill('MARKER-XYZ');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.waitForURL(/q=MARKER-XYZ/);
    assert.deepEqual(await page.locator('.log-line').allTextContents(), ['900marker-xyz']);
    assert.deepEqual(await seriousViolations(page), [], 'search results');
    await page.locator('.log-line a.ln').click();
    await page.locator('#L900.selected').waitFor();
    assert.deepEqual(problems, []);
  });

  it('shows a plan from its run page: counts, changes filtered by address, attributes with sensitive values hidden', async () => {
    const stack = await createTofuStack(t, { name: 'core' });
    await t.call('PUT', `/stacks/${stack.id}/sensitive-variables/password`, { body: { data: { value: 'browser-plan-secret' } } });
    const run = await triggerRun(t, stack.id);
    await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL', 30_000);
    const { page, problems } = await newPage();
    await signIn(page, t.adminToken);
    await page.goto(`${baseUrl}/orgs/${orgId}/runs/${run.id}`);
    await page.getByRole('link', { name: 'View the plan' }).click();
    await page.waitForURL(/\/plan$/);
    assert.match((await page.locator('.plan-counts').textContent()) ?? '', /\+2 to add/);
    await page.getByLabel('Address').fill('login');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/address=login/);
    assert.deepEqual(await page.locator('details.plan-change summary code').allTextContents(), ['standin_login.admin']);
    await page.locator('details.plan-change summary').click();
    const password = page.locator('table.attributes tr', { hasText: 'password' });
    assert.equal(await password.locator('td').nth(2).textContent(), '(sensitive)');
    assert.ok(!(await page.content()).includes('browser-plan-secret'));
    await screenshot(page, 'plan');
    assert.deepEqual(await seriousViolations(page), [], 'plan page');
    assert.deepEqual(problems, []);
  });

  it('takes a new user from nothing to an applied stack: project, environment, stack, variables, run, plan, approval', async () => {
    const { page, problems } = await newPage();
    await signIn(page, t.adminToken);
    await page.getByRole('link', { name: 'Environments' }).click();
    await page.locator('#project-name').fill('Shop');
    await page.locator('#project-given-id').fill('shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { name: /Shop/ }).waitFor();
    await page.locator('#environment-project').selectOption({ label: 'Shop' });
    await page.locator('#environment-name').fill('Live');
    await page.locator('#environment-given-id').fill('live');
    await page.getByRole('button', { name: 'Create environment' }).click();
    await page.getByRole('link', { name: 'Live' }).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'environments page');
    await page.getByRole('link', { name: 'modules' }).last().click();
    await page.getByRole('heading', { name: 'Modules of Live' }).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'module graph page');
    await page.goBack();
    await page.getByRole('link', { name: 'default values' }).last().click();
    await page.getByRole('heading', { name: 'Default values of Live' }).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'default values page');
    await page.goBack();

    await page.getByRole('link', { name: 'Stacks' }).click();
    await page.locator('#stack-name').fill('shop-network');
    await page.locator('#stack-env').selectOption({ label: 'Shop / Live' });
    await page.getByRole('button', { name: 'Create stack' }).click();
    await page.getByRole('heading', { level: 1, name: 'shop-network' }).waitFor();
    await page.getByLabel(/input variables/).fill('{"name": "shop"}');
    await page.getByRole('button', { name: 'Save variables' }).click();
    await page.locator('#sensitive-name').fill('password');
    await page.locator('#sensitive-value').fill('browser-e2e-secret');
    await page.getByRole('button', { name: 'Set sensitive variable' }).click();
    await page.getByRole('button', { name: 'Remove password' }).waitFor();
    await screenshot(page, 'stack');
    assert.deepEqual(await seriousViolations(page), [], 'stack page');
    const stackUrl = page.url();
    await page.getByRole('link', { name: 'change' }).click();
    await page.getByRole('button', { name: 'Preview changes' }).click();
    await page.getByRole('heading', { name: 'Changes against version 1' }).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'pipeline page with a preview');
    await page.goto(`${baseUrl}/orgs/${orgId}/access`);
    assert.deepEqual(await seriousViolations(page), [], 'access page');
    await page.goto(`${baseUrl}/orgs/${orgId}/audit`);
    assert.deepEqual(await seriousViolations(page), [], 'audit log');
    await page.goto(`${baseUrl}/orgs/${orgId}/code-sources`);
    assert.deepEqual(await seriousViolations(page), [], 'code sources');
    await page.goto(`${baseUrl}/orgs/${orgId}/organization`);
    assert.deepEqual(await seriousViolations(page), [], 'organizations');
    await page.goto(stackUrl);
    await page.getByRole('heading', { level: 1, name: 'shop-network' }).waitFor();

    await page.getByLabel('Description').fill('First deploy');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/\/runs\/\w+$/);
    // The plan finishes while the page is open: its link arrives through the live stream.
    await page.getByRole('link', { name: 'View the plan' }).click({ timeout: 30_000 });
    assert.match((await page.locator('.plan-counts').textContent()) ?? '', /\+2 to add/);
    await page.goBack();
    await page.getByRole('button', { name: 'Approve approve' }).click();
    await page.locator('h1', { hasText: 'succeeded' }).waitFor({ timeout: 30_000 });
    await page.getByRole('link', { name: 'shop-network' }).click();
    await page.locator('td .status-SUCCEEDED').first().waitFor();
    assert.ok(!(await page.content()).includes('browser-e2e-secret'));
    assert.deepEqual(problems, []);
  });

  it('goes to a stack from the keyboard, follows shortcuts, copies an id, and reads well in the dark theme', async () => {
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const name = (await t.call('GET', `/stacks/${stack.id}`)).body.data.name as string;
    const run = await triggerRun(t, stack.id);
    await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const { page, problems } = await newPage();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
    await signIn(page, t.adminToken);

    await page.keyboard.press('/');
    await page.getByLabel(/A stack or environment by name/).fill(name);
    const match = page.locator('#palette-results a', { hasText: name });
    await match.waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'the open palette');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/stacks/${stack.id}$`));

    await page.keyboard.press('g');
    await page.keyboard.press('r');
    await page.waitForURL(/\/runs$/);
    await page.keyboard.press('j');
    assert.equal(await page.locator('tr.current').count(), 1);
    await page.keyboard.press('?');
    await page.getByRole('heading', { name: 'Keyboard shortcuts' }).waitFor();
    await page.keyboard.press('Escape');

    await page.goto(`${baseUrl}/orgs/${orgId}/runs/${run.id}`);
    await page.getByRole('button', { name: 'Copy ID of this run' }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), run.id);

    await page.getByLabel('Theme').selectOption('dark');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(new RegExp(`/runs/${run.id}$`));
    assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark');
    assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(13, 17, 23)');
    await screenshot(page, 'run-dark', false);
    assert.deepEqual(await seriousViolations(page), [], 'run page, dark theme');
    assert.deepEqual(problems, []);
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
  });

  it('shows a VIEWER the run without any button that would change it', async () => {
    const viewer = await userCaller(t, 'browser-viewer@example.com', 'VIEWER');
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const { page, problems } = await newPage();
    await signIn(page, viewer.token);
    await page.goto(`${baseUrl}/orgs/${orgId}/runs/${run.id}`);
    assert.match((await page.locator('h1').textContent()) ?? '', /waiting for approval/);
    const buttons = await page.getByRole('button').allTextContents();
    // Only buttons that change nothing of the organization's.
    assert.deepEqual(buttons.sort(), ['Apply', 'Copy ID', 'Copy link', 'Go to…', 'Sign out', 'Sign out everywhere']);
    assert.deepEqual(await seriousViolations(page), [], 'run page as a VIEWER');
    assert.deepEqual(problems, []);
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
  });

  it("links a user's account on a Git server from their account page, then signs them in through that server's login", async () => {
    const oauth = new OAuth2Server();
    await oauth.issuer.keys.generate('RS256');
    await oauth.start(0, '127.0.0.1');
    oauth.service.on('beforeUserinfo', (response: { body: unknown }) => {
      response.body = { id: 7007, username: 'browser-grace' };
    });
    // The OAuth server sends the browser back to PLINTH_PUBLIC_URL: this app's real port.
    const publicUrl = t.app.config.publicUrl;
    t.app.config.publicUrl = baseUrl;
    try {
      const server = (
        await t.call('POST', '/git-self-hosted-servers', {
          body: {
            data: {
              name: 'forge',
              provider: 'GITLAB',
              baseUrl: oauth.issuer.url,
              authorizeUrl: `${oauth.issuer.url}/authorize`,
              tokenUrl: `${oauth.issuer.url}/token`,
              userUrl: `${oauth.issuer.url}/userinfo`,
              clientId: 'plinth-client',
              clientSecret: 'browser-client-secret',
            },
          },
        })
      ).body.data;
      const grace = await userCaller(t, 'browser-grace@example.com', 'MEMBER');
      const { page, problems } = await newPage();
      await signIn(page, grace.token);
      await page.getByRole('link', { name: 'browser-grace@example.com' }).click();
      await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
      assert.deepEqual(await seriousViolations(page), [], 'account page');
      await page.getByRole('button', { name: 'Link my account' }).click();
      // Through the OAuth server and back: the account page again, with the link.
      await page.locator('td', { hasText: 'browser-grace' }).first().waitFor();
      assert.match(page.url(), /\/account$/);
      await screenshot(page, 'account');

      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL(/\/sign-in$/);
      await page.goto(server.signInUrl);
      assert.deepEqual(await seriousViolations(page), [], 'a Git sign-in link');
      await page.getByRole('button', { name: /^Continue to / }).click();
      await page.waitForURL(/\/orgs\/[^/]+\/runs$/);
      assert.match((await page.locator('.who').textContent()) ?? '', /browser-grace@example\.com/);

      // This browser now offers the server on its sign-in page.
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL(/\/sign-in$/);
      await page.getByRole('button', { name: /Sign in through forge/ }).click();
      await page.waitForURL(/\/orgs\/[^/]+\/runs$/);
      assert.deepEqual(problems, []);
    } finally {
      t.app.config.publicUrl = publicUrl;
      await oauth.stop();
    }
  });

  it('moves the keyboard focus through every page in reading order, always visibly, from a skip link that jumps to the content', async () => {
    const stack = await createStack(t, [{ id: 'approve', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const { page, problems } = await newPage();
    await page.goto(`${baseUrl}/sign-in`);
    assert.deepEqual(await focusWalk(page), [], 'sign-in page');
    await signIn(page, t.adminToken);
    for (const path of ['runs', `runs/${run.id}`, `stacks/${stack.id}`, 'environments', 'access', 'account']) {
      await page.goto(`${baseUrl}/orgs/${orgId}/${path}`);
      assert.deepEqual(await focusWalk(page), [], path);
    }
    assert.deepEqual(problems, []);
    await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
  });

  it('passes the axe scan on the pages the other tests do not open: lists, module pages, state diff, a new token, an error', async () => {
    const git = await startGitServer();
    try {
      commitModules(git);
      const codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'axe-modules', url: git.repoUrl('public') } } })).body.data.id;
      const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'axe', name: 'Axe' } } })).body.data.id;
      const envId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'axe-prod', name: 'Axe prod' } } })).body.data.id;
      const [network, database] = [await publishModule(t, codeSourceId, 'network'), await publishModule(t, codeSourceId, 'database')];
      const instance = async (givenId: string, moduleVersionId: string, values: Record<string, unknown>) =>
        (await t.call('POST', '/module-instances', { body: { data: { environmentId: envId, moduleVersionId, givenId, name: givenId, values } } })).body.data.id;
      const net = await instance('axe-net', network.versionId, { name: 'main' });
      // Nothing is applied, so this reference is a problem: the graph draws it red, with its message.
      const db = await instance('axe-db', database.versionId, { vpc_id: { $ref: { instance: net, output: 'vpc_id' } } });

      const { page, problems } = await newPage();
      await signIn(page, t.adminToken);
      const scan = async (path: string, what: string) => {
        await page.goto(`${baseUrl}/orgs/${orgId}/${path}`);
        assert.deepEqual(await seriousViolations(page), [], what);
      };
      await scan('stacks', 'stacks list');
      await scan('pipelines', 'pipelines list');
      await scan(`environments/${envId}/modules`, 'module graph with a broken reference');
      await screenshot(page, 'module-graph');
      await scan(`module-instances/${db}`, 'module instance');
      assert.deepEqual(problems, []);
      await scan('runs/0196a3c7e1f07a2b9c3d4e5f60718293', 'an error page');
      assert.deepEqual(problems.splice(0), ['Failed to load resource: the server responded with a status of 404 (Not Found)']);
      const stack = (await t.call('GET', '/stacks?search=shop-network')).body.data[0];
      const version = (await t.call('GET', `/stacks/${stack.id}/state-versions?order=desc`)).body.data[0];
      await scan(`stacks/${stack.id}/state-diff?from=${version.id}&to=${version.id}`, 'state diff');
      await scan('access', 'access page');
      await page.locator('#key-name').fill('axe key');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('.token-once').waitFor();
      assert.deepEqual(await seriousViolations(page), [], 'a new key with its token shown once');
      await page.getByLabel('Theme').selectOption('dark');
      await page.getByRole('button', { name: 'Apply' }).click();
      await scan('runs', 'runs inbox, dark theme');
      await scan(`environments/${envId}/modules`, 'module graph, dark theme');
      assert.deepEqual(problems, []);
    } finally {
      await git.close();
    }
  });

  /**
   * Tabs through the whole page and returns what breaks keyboard use: the skip link is not the first
   * stop or does not lead into the content, focus jumps backwards in the document (a positive tabindex,
   * a reordering), or a focused element shows no focus ring or is out of view.
   */
  const focusWalk = async (page: Page): Promise<string[]> => {
    const found: string[] = [];
    const focused = () =>
      page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        if (!el || el === document.body) return undefined;
        const all = [...document.querySelectorAll('*')];
        const style = getComputedStyle(el);
        const box = el.getBoundingClientRect();
        return {
          index: all.indexOf(el),
          name: `${el.tagName.toLowerCase()} "${(el.getAttribute('aria-label') ?? el.textContent ?? el.getAttribute('name') ?? '').trim().slice(0, 40)}"`,
          ring: style.outlineStyle !== 'none' && Number.parseFloat(style.outlineWidth) >= 2,
          inView: box.bottom > 0 && box.top < window.innerHeight && box.right > 0 && box.left < window.innerWidth,
          inMain: Boolean(el.closest('main')),
        };
      });
    await page.locator('body').focus();
    await page.keyboard.press('Tab');
    const first = await focused();
    if (!first?.name.includes('Skip to')) found.push(`the first stop is ${first?.name}, not the skip link`);
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    if (!(await focused())?.inMain) found.push('the skip link does not lead into the main content');
    await page.locator('body').focus();
    let last = -1;
    for (let stop = 0; stop < 400; stop++) {
      await page.keyboard.press('Tab');
      const now = await focused();
      if (!now || (stop > 0 && now.index <= last && now.index === first?.index)) break;
      if (now.index <= last) found.push(`focus goes back to ${now.name}`);
      if (!now.ring) found.push(`${now.name} shows no focus ring`);
      if (!now.inView) found.push(`${now.name} is out of view when focused`);
      last = now.index;
    }
    return found;
  };
});
