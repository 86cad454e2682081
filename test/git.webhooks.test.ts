import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import { GitPoller } from '../src/git-webhooks/poller.ts';
import { metrics } from '../src/platform/metrics/metrics.ts';
import { TEST_SECRETS } from './helpers/app.ts';
import { assertError } from './helpers/callers.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import {
  FAST_ENGINE_ENV,
  getRun,
  LOOPBACK_GIT_ENV,
  logLines,
  pipelineConfig,
  startEngineTestApp,
  stepsOf,
  waitForRunStatus,
  type EngineTestApp,
} from './helpers/engine.ts';

const SECRET = 'webhook-secret-0123456789';

describe('push webhooks', () => {
  let t: EngineTestApp;
  let git: GitServer;
  let source: { id: string };
  let projectId: string;
  let environmentId: string;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker(loadEngineConfig({ ...FAST_ENGINE_ENV, ...LOOPBACK_GIT_ENV }));
    git = await startGitServer();
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'infra', name: 'Infra' } } })).body.data.id;
    environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
    source = (await t.call('POST', '/code-sources', { body: { data: { name: 'pub', url: git.repoUrl('public'), provider: 'GITHUB', webhookSecret: SECRET } } }))
      .body.data;
  });
  after(async () => {
    await t.close();
    await git.close();
  });

  const stack = async (name: string, src: Record<string, unknown>) => {
    const res = await t.call('POST', '/stacks', {
      body: {
        data: {
          projectId,
          environmentId,
          name,
          source: { codeSourceId: source.id, ...src },
          pipelines: { change: pipelineConfig([{ id: 'show', command: 'cat main.tf; echo "at $PLINTH_COMMIT_SHA"' }]) },
        },
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  };
  const githubPush = (sha: string, paths: string[], branch = 'main') =>
    JSON.stringify({
      ref: `refs/heads/${branch}`,
      after: sha,
      head_commit: { id: sha, message: 'Change the app\n\nbody', author: { name: 'Grace Hopper' } },
      commits: [{ id: sha, modified: paths }],
    });
  const deliver = (raw: string, headers: Record<string, string>, id = source.id) =>
    t.call('POST', `/webhooks/git/${id}`, { token: null, rawBody: raw, headers: { 'content-type': 'application/json', ...headers } });
  const sign = (raw: string, secret = SECRET) => createHmac('sha256', secret).update(raw).digest('hex');
  const deliveries = async () => (await t.db.selectFrom('git_webhook_deliveries').select('delivery_id').execute()).length;

  it('a GitHub push to the tracked branch that touches the stack path runs it at the pushed commit, once per delivery', async () => {
    const app = await stack('app', { ref: 'main', path: 'stacks/app' });
    const other = await stack('other', { ref: 'main', path: 'stacks/other' });
    const planned = await stack('planned', { ref: 'main', path: 'stacks/app', onPush: 'plan' });
    const sha = git.commit('public', 'main', 'stacks/app/main.tf', 'resource "pushed" {}\n', 'Grace Hopper');
    const raw = githubPush(sha, ['stacks/app/main.tf']);
    const headers = { 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': `sha256=${sign(raw)}` };
    const res = await deliver(raw, headers);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.duplicate, false);
    assert.equal(res.body.data.runIds.length, 2);
    const runs = await Promise.all(res.body.data.runIds.map((id: string) => getRun(t, id)));
    assert.deepEqual(runs.map((r) => r.attachedEntityId).sort(), [app.id, planned.id].sort());
    assert.ok(!runs.some((r) => r.attachedEntityId === other.id));
    const run = runs.find((r) => r.attachedEntityId === app.id);
    assert.equal(run.action, 'apply');
    assert.equal(runs.find((r) => r.attachedEntityId === planned.id).action, 'plan');
    assert.equal(run.commitSha, sha);
    assert.match(run.description, new RegExp(`${sha.slice(0, 12)}.*Grace Hopper`));
    assert.equal(run.triggerMetadata.webhook_event, 'github:push');
    const done = await waitForRunStatus(t, run.id, 'SUCCEEDED', 60_000);
    assert.equal(done.commitSha, sha);
    const lines = await logLines(t, (await stepsOf(t, run.id))[0].id);
    assert.ok(lines.includes('resource "pushed" {}') && lines.includes(`at ${sha}`), lines.join('\n'));

    const replay = await deliver(raw, headers);
    assert.equal(replay.status, 200);
    assert.deepEqual(replay.body.data, { deliveryId: headers['x-github-delivery'], duplicate: true, runIds: [] });
    assert.equal((await t.call('GET', `/pipeline-runs?stackId=${app.id}`)).body.data.length, 1);
  });

  it('a forged or missing signature, an unknown provider, an unknown source or a source without secret is 401 and stores nothing', async () => {
    const sha = git.head('public', 'main');
    const raw = githubPush(sha, ['stacks/app/main.tf']);
    const before = await deliveries();
    const id = randomUUID();
    assertError(
      await deliver(raw, { 'x-github-event': 'push', 'x-github-delivery': id, 'x-hub-signature-256': `sha256=${sign(raw, 'not-the-secret-at-all')}` }),
      401,
      'Git:Webhook:UNVERIFIED',
    );
    assertError(await deliver(raw, { 'x-github-event': 'push', 'x-github-delivery': id }), 401);
    assertError(await deliver(`${raw} `, { 'x-github-event': 'push', 'x-github-delivery': id, 'x-hub-signature-256': `sha256=${sign(raw)}` }), 401);
    assertError(await deliver(raw, { 'x-bitbucket-event': 'push', 'x-hub-signature-256': `sha256=${sign(raw)}` }), 401);
    assertError(await deliver(raw, { 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${sign(raw)}` }, 'no-such-source'), 401);
    const bare = (await t.call('POST', '/code-sources', { body: { data: { name: 'nosecret', url: git.repoUrl('public') } } })).body.data;
    assertError(await deliver(raw, { 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${sign(raw)}` }, bare.id), 401);
    // Gitea sends GitHub's headers too: it is judged by its own signature header.
    assertError(
      await deliver(raw, {
        'x-gitea-event': 'push',
        'x-github-event': 'push',
        'x-hub-signature-256': `sha256=${sign(raw)}`,
        'x-gitea-signature': sign(raw, 'forged-secret-000000'),
      }),
      401,
    );
    assertError(await deliver(raw, { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': 'forged-token-000000' }), 401);
    assert.equal(await deliveries(), before);
  });

  it('Gitea and GitLab pushes are verified their own way; a push that touches nothing of a stack triggers nothing', async () => {
    const sha = git.commit('public', 'main', 'docs/readme.md', 'docs\n');
    const raw = githubPush(sha, ['docs/readme.md']);
    const gitea = await deliver(raw, {
      'x-gitea-event': 'push',
      'x-github-event': 'push',
      'x-gitea-delivery': randomUUID(),
      'x-gitea-signature': sign(raw),
      'x-hub-signature-256': 'sha256=00',
    });
    assert.equal(gitea.status, 200, JSON.stringify(gitea.body));
    assert.deepEqual(gitea.body.data.runIds, []);
    const gitlabRaw = JSON.stringify({
      ref: 'refs/heads/main',
      after: sha,
      user_name: 'Linus',
      total_commits_count: 1,
      commits: [{ id: sha, message: 'm', author: { name: 'Linus' }, modified: ['docs/readme.md'] }],
    });
    const gitlab = await deliver(gitlabRaw, { 'x-gitlab-event': 'Push Hook', 'x-gitlab-event-uuid': randomUUID(), 'x-gitlab-token': SECRET });
    assert.equal(gitlab.status, 200, JSON.stringify(gitlab.body));
    assert.equal(gitlab.body.data.duplicate, false);
  });

  it('deliveries are counted by provider event and result, with no id as a label', async () => {
    const counted = (await metrics.inboundEvents.get()).values;
    const count = (type: string, result: string) =>
      counted.find((v) => v.labels.source === 'git' && v.labels.type === type && v.labels.result === result)?.value ?? 0;
    assert.ok(count('push', 'accepted') >= 2, 'accepted pushes');
    assert.ok(count('push', 'unverified') + count('other', 'unverified') >= 1, 'refused signatures');
    assert.ok(counted.every((v) => Object.keys(v.labels).every((k) => ['source', 'type', 'result'].includes(k))));
  });

  it('only the webhook reads raw bytes: other routes still refuse a body that is not JSON', async () => {
    assertError(await t.call('POST', '/projects', { rawBody: 'givenId=x', headers: { 'content-type': 'text/plain' } }), 415);
    assertError(await t.call('POST', '/projects', { rawBody: '{"data": {"__proto__": {}}}' }), 400);
  });
});

describe('the branch poller, for sources that cannot send webhooks', () => {
  let t: EngineTestApp;
  let git: GitServer;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker(loadEngineConfig({ ...FAST_ENGINE_ENV, ...LOOPBACK_GIT_ENV }));
    git = await startGitServer();
  });
  after(async () => {
    await t.close();
    await git.close();
  });

  it('a moved head of a tracked branch runs the stack at the new commit, once however many pollers look', async () => {
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'poll', name: 'Poll' } } })).body.data.id;
    const environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'dev', name: 'Dev' } } })).body.data.id;
    const source = (await t.call('POST', '/code-sources', { body: { data: { name: 'polled', url: git.repoUrl('public') } } })).body.data;
    const stack = (
      await t.call('POST', '/stacks', {
        body: {
          data: {
            projectId,
            environmentId,
            name: 'polled',
            source: { codeSourceId: source.id, ref: 'feature/x' },
            pipelines: { change: pipelineConfig([{ id: 'a', command: 'true' }]) },
          },
        },
      })
    ).body.data;
    const git2 = { ...t.app.config.git, pollIntervalSeconds: 1 };
    const silent = { info() {}, warn() {}, error() {} } as unknown as ConstructorParameters<typeof GitPoller>[3];
    const pollers = [new GitPoller(t.db, TEST_SECRETS, git2, silent), new GitPoller(t.db, TEST_SECRETS, git2, silent)];
    assert.deepEqual(await pollers[0].pollOnce(), [], 'the first sight of a head is a baseline');
    const sha = git.commit('public', 'feature/x', 'stacks/app/main.tf', 'resource "polled" {}\n');
    const triggered = (await Promise.all(pollers.map((p) => p.pollOnce()))).flat();
    assert.equal(triggered.length, 1);
    const run = await getRun(t, triggered[0]);
    assert.equal(run.attachedEntityId, stack.id);
    assert.equal(run.commitSha, sha);
    assert.match(run.description, new RegExp(sha.slice(0, 12)));
    assert.deepEqual(await pollers[1].pollOnce(), []);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 60_000);
  });

  it('polls every tracked source, a page of sources at a time, whatever their number', async () => {
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'paged', name: 'Paged' } } })).body.data.id;
    const environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'dev', name: 'Dev' } } })).body.data.id;
    const stacks: string[] = [];
    for (const branch of ['paged/one', 'paged/two', 'paged/three']) {
      git.branch('public', branch);
      const source = (await t.call('POST', '/code-sources', { body: { data: { name: branch, url: git.repoUrl('public') } } })).body.data;
      const stack = await t.call('POST', '/stacks', {
        body: {
          data: {
            projectId,
            environmentId,
            name: branch.replace('/', '-'),
            source: { codeSourceId: source.id, ref: branch },
            pipelines: { change: pipelineConfig([{ id: 'a', command: 'true' }]) },
          },
        },
      });
      stacks.push(stack.body.data.id);
    }
    const silent = { info() {}, warn() {}, error() {} } as unknown as ConstructorParameters<typeof GitPoller>[3];
    // One source a page: every page is read, the last one short.
    const poller = new GitPoller(t.db, TEST_SECRETS, { ...t.app.config.git, pollIntervalSeconds: 1 }, silent, 1);
    await poller.pollOnce();
    for (const branch of ['paged/one', 'paged/two', 'paged/three']) git.commit('public', branch, 'stacks/app/main.tf', `resource "${branch}" {}\n`);
    const triggered = await poller.pollOnce();
    const ran = await Promise.all(triggered.map(async (id) => (await getRun(t, id)).attachedEntityId));
    assert.deepEqual(ran.filter((id) => stacks.includes(id)).sort(), [...stacks].sort());
    for (const id of triggered) await waitForRunStatus(t, id, 'SUCCEEDED', 60_000);
  });
});
