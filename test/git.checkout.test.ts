import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import { recordRunCommit } from '../src/engine/run-commit.repo.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import {
  FAST_ENGINE_ENV,
  getRun,
  LOOPBACK_GIT_ENV,
  logLines,
  pipelineConfig,
  startEngineTestApp,
  stepsOf,
  triggerRun,
  waitFor,
  waitForRunStatus,
  waitForStep,
  type EngineTestApp,
} from './helpers/engine.ts';

describe('the checkout of a stack source', () => {
  let t: EngineTestApp;
  let git: GitServer;
  let projectId: string;
  let environmentId: string;
  const config = loadEngineConfig({ ...FAST_ENGINE_ENV, ...LOOPBACK_GIT_ENV });
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker(config);
    git = await startGitServer({ tokens: ['checkout-token-1234'] });
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'infra', name: 'Infra' } } })).body.data.id;
    environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
  });
  after(async () => {
    await t.close();
    await git.close();
  });

  async function stackOn(source: Record<string, unknown>, steps: Parameters<typeof pipelineConfig>[0]) {
    const res = await t.call('POST', '/stacks', {
      body: { data: { projectId, environmentId, name: `s-${Math.random()}`, source, pipelines: { change: pipelineConfig(steps) } } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  }

  it('every step of a run sees the commit its first step resolved, in the stack path, without the credential', async () => {
    const source = (
      await t.call('POST', '/code-sources', { body: { data: { name: 'priv', url: git.repoUrl('private'), authType: 'TOKEN', token: 'checkout-token-1234' } } })
    ).body.data;
    const first = git.commit('private', 'main', 'stacks/app/main.tf', 'resource "one" {}\n');
    const probe =
      'pwd; cat main.tf; echo "sha=$PLINTH_COMMIT_SHA"; ! env | grep -q checkout-token; ! grep -rq checkout-token /workspace /tmp; ! grep -rq Authorization /workspace; echo clean';
    const stack = await stackOn({ codeSourceId: source.id, ref: 'main', path: 'stacks/app' }, [
      { id: 'a', command: probe },
      { id: 'gate', type: 'approval', needs: ['a'] },
      { id: 'b', command: probe, needs: ['gate'] },
    ]);
    const run = await triggerRun(t, stack.id);
    const gate = await waitForStep(t, run.id, 'gate', 'WAITING_FOR_APPROVAL', 60_000);
    assert.equal((await getRun(t, run.id)).commitSha, first);
    // A push between the steps changes nothing for this run.
    git.commit('private', 'main', 'stacks/app/main.tf', 'resource "two" {}\n');
    assert.equal((await t.call('POST', `/pipeline-step-executions/${gate.id}/approve`)).status, 200);
    const done = await waitForRunStatus(t, run.id, 'SUCCEEDED', 60_000);
    assert.equal(done.commitSha, first);
    // Runs are found by their commit (or its first digits) and by the branch their stack tracks.
    const ids = async (query: string) => (await t.call('GET', `/pipeline-runs?${query}&limit=200`)).body.data.map((r: { id: string }) => r.id);
    assert.deepEqual(await ids(`commitSha=${first.slice(0, 7)}`), [run.id]);
    assert.deepEqual(await ids(`commitSha=${first}`), [run.id]);
    assert.ok((await ids('ref=main')).includes(run.id));
    assert.deepEqual(await ids('ref=release'), []);
    assert.equal((await t.call('GET', '/pipeline-runs?commitSha=ab%25')).status, 400, 'no LIKE wildcard gets through');
    for (const step of (await stepsOf(t, run.id)).filter((s) => s.stepType === 'script')) {
      const lines = await logLines(t, step.id);
      assert.ok(lines.includes('/workspace/src/stacks/app'), lines.join('\n'));
      assert.ok(lines.includes('resource "one" {}'), lines.join('\n'));
      assert.ok(lines.includes(`sha=${first}`));
      assert.ok(lines.includes('clean'), lines.join('\n'));
      assert.ok(!lines.join('\n').includes('checkout-token'));
    }
  });

  it('a retried run checks out its recorded commit again, not the branch head', async () => {
    const source = (await t.call('POST', '/code-sources', { body: { data: { name: 'pub', url: git.repoUrl('public') } } })).body.data;
    const stack = await stackOn({ codeSourceId: source.id, ref: 'dev' }, [{ id: 'a', command: 'cat stacks/app/main.tf; test ! -f marker' }]);
    const recorded = git.commit('public', 'dev', 'marker', 'x');
    const run = await triggerRun(t, stack.id);
    const failed = await waitForRunStatus(t, run.id, 'FAILED', 60_000);
    assert.equal(failed.commitSha, recorded);
    git.commit('public', 'dev', 'other', 'y');
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/retry`)).status, 200);
    const again = await waitForRunStatus(t, run.id, 'FAILED', 60_000);
    assert.equal(again.attemptEpoch, 2);
    assert.equal(again.commitSha, recorded);
  });

  it('a refused credential or an unknown ref fails the step with Engine:Checkout:FAILED, and the step never runs', async () => {
    const wrong = (
      await t.call('POST', '/code-sources', { body: { data: { name: 'wrong', url: git.repoUrl('private'), authType: 'TOKEN', token: 'wrong-token-5678' } } })
    ).body.data;
    const pub = (await t.call('POST', '/code-sources', { body: { data: { name: 'pub2', url: git.repoUrl('public') } } })).body.data;
    for (const source of [
      { codeSourceId: wrong.id, ref: 'main' },
      { codeSourceId: pub.id, ref: 'no-such-branch' },
    ]) {
      const stack = await stackOn(source, [{ id: 'a', command: 'echo ran' }]);
      const run = await triggerRun(t, stack.id);
      await waitForRunStatus(t, run.id, 'FAILED', 60_000);
      const [step] = await stepsOf(t, run.id);
      assert.equal(step.error.code, 'Engine:Checkout:FAILED', JSON.stringify(step.error));
      const lines = await logLines(t, step.id);
      assert.ok(!lines.includes('ran'));
      assert.ok(!JSON.stringify(step).includes('wrong-token-5678') && !lines.join('\n').includes('wrong-token-5678'));
    }
  });

  it('a fetch whose pack is past PLINTH_GIT_CACHE_MAX_BYTES fails the step, and its log says so', async () => {
    const source = (await t.call('POST', '/code-sources', { body: { data: { name: 'huge', url: git.repoUrl('public') } } })).body.data;
    git.commitWith('public', 'huge', (work) => writeFileSync(path.join(work, 'huge.bin'), randomBytes(1024 * 1024)));
    const stack = await stackOn({ codeSourceId: source.id, ref: 'huge' }, [{ id: 'a', command: 'echo ran' }]);
    const saved = config.git.cacheMaxBytes;
    config.git.cacheMaxBytes = 256 * 1024;
    try {
      const run = await triggerRun(t, stack.id);
      await waitForRunStatus(t, run.id, 'FAILED', 60_000);
      const [step] = await stepsOf(t, run.id);
      assert.equal(step.error.code, 'Engine:Checkout:FAILED', JSON.stringify(step.error));
      const lines = (await logLines(t, step.id)).join('\n');
      assert.match(lines, /the fetch was stopped: it received more than PLINTH_GIT_CACHE_MAX_BYTES \(262144 bytes\) in one file/);
      assert.match(step.error.message, /received more than PLINTH_GIT_CACHE_MAX_BYTES \(262144 bytes\) in one file/);
      assert.doesNotMatch(lines, /^ran$/m);
    } finally {
      config.git.cacheMaxBytes = saved;
    }
  });

  it('recording the commit is fenced by the lease and happens once: a stale epoch or another worker records nothing', async () => {
    const pub = (await t.call('POST', '/code-sources', { body: { data: { name: 'fenced', url: git.repoUrl('public') } } })).body.data;
    const stack = await stackOn({ codeSourceId: pub.id, ref: 'main' }, [{ id: 'a', command: 'sleep 3' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'a', 'RUNNING', 60_000);
    const recorded = await waitFor('the commit', async () => (await getRun(t, run.id)).commitSha);
    const row = await t.db.selectFrom('step_executions').select(['lease_owner', 'lease_epoch']).where('id', '=', step.id).executeTakeFirstOrThrow();
    const fence = { runId: run.id, executionId: step.id, workerId: row.lease_owner!, leaseEpoch: row.lease_epoch };
    const other = 'f'.repeat(40);
    assert.equal(await recordRunCommit(t.db, { ...fence, leaseEpoch: fence.leaseEpoch + 1 }, other), undefined);
    assert.equal(await recordRunCommit(t.db, { ...fence, workerId: 'someone-else' }, other), undefined);
    assert.equal(await recordRunCommit(t.db, fence, other), recorded, 'the holder is told the commit already recorded');
    assert.equal((await getRun(t, run.id)).commitSha, recorded);
    await waitForRunStatus(t, run.id, 'SUCCEEDED', 60_000);
  });

  it('a ref that is an option or a refspec is refused before anything is fetched', async () => {
    const pub = (await t.call('POST', '/code-sources', { body: { data: { name: 'pub3', url: git.repoUrl('public') } } })).body.data;
    const stack = await stackOn({ codeSourceId: pub.id, ref: '--upload-pack=touch /tmp/x' }, [{ id: 'a', command: 'echo ran' }]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'FAILED', 60_000);
    const [step] = await stepsOf(t, run.id);
    assert.equal(step.error.code, 'Engine:Checkout:INVALID_SOURCE');
  });
});
