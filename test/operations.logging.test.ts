import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { approveStep } from '../src/engine/run-commands.ts';
import { tellRunStoriesTo } from '../src/engine/run-story.ts';
import { buildApp, type App } from '../src/platform/http/app.ts';
import { loadConfig } from '../src/platform/config.ts';
import { ROUTES } from '../src/routes.ts';
import { TEST_SECRETS } from './helpers/app.ts';
import { createStack, startEngineTestApp, triggerRun, waitForRunStatus, waitForStep, type EngineTestApp } from './helpers/engine.ts';

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

const INFO = 30;
const DEBUG = 20;

describe('the server log tells the story of each run', () => {
  let t: EngineTestApp;
  let logged: App;
  const lines: Line[] = [];
  // The logger as the server makes it, writing to an array instead of stdout.
  const capture = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const storyOf = (runId: string) => lines.filter((l) => l.runId === runId && typeof l.event === 'string');

  before(async () => {
    t = await startEngineTestApp();
    tellRunStoriesTo(capture);
    await t.startWorker();
    // A second API on the same database, whose request log is captured.
    const config = { ...loadConfig({}), databaseUrl: t.database.url, adminToken: t.adminToken };
    logged = await buildApp({ db: t.db, config, logger: capture, routes: ROUTES, secrets: TEST_SECRETS });
  });
  after(async () => {
    tellRunStoriesTo(undefined);
    await logged.close();
    await t.close();
  });

  it('a run that succeeds: queued, started, each step on its worker, waiting for approval, approved by whom, finished', async () => {
    const stack = await createStack(t, [
      { id: 'plan', command: 'echo planning' },
      { id: 'approve', type: 'approval', needs: ['plan'] },
      { id: 'apply', command: 'echo applying', needs: ['approve'] },
    ]);
    const run = await triggerRun(t, stack.id);
    const approval = await waitForStep(t, run.id, 'approve', 'WAITING_FOR_APPROVAL');
    const me = (await t.call('GET', '/auth/whoami')).body.data;
    assert.equal((await t.call('POST', `/pipeline-step-executions/${approval.id}/approve`)).status, 200);
    await waitForRunStatus(t, run.id, 'SUCCEEDED');

    const story = storyOf(run.id);
    assert.deepEqual(
      story.map((l) => [l.event, l.stepId ?? null]),
      [
        ['run.queued', null],
        ['step.queued', 'plan'],
        ['step.started', 'plan'],
        ['run.started', null],
        ['step.finished', 'plan'],
        ['step.waiting_for_approval', 'approve'],
        ['run.waiting_for_approval', null],
        ['step.approved', 'approve'],
        ['step.queued', 'apply'],
        ['run.resumed', null],
        ['step.started', 'apply'],
        ['step.finished', 'apply'],
        ['run.finished', null],
      ],
    );
    for (const line of story) {
      assert.equal(line.level, INFO, line.msg);
      assert.equal(line.organizationId, run.organizationId, line.msg);
      assert.equal(line.stackId, stack.id, line.msg);
      if (line.stepId) assert.match(String(line.stepExecutionId), /./, line.msg);
    }
    const started = story.filter((l) => l.event === 'step.started');
    assert.deepEqual(
      started.map((l) => [l.stepName, l.workerId]),
      [
        ['plan', 'test-worker-1'],
        ['apply', 'test-worker-1'],
      ],
    );
    assert.equal(story.find((l) => l.event === 'step.approved')?.approvedBy, me.userId);
    assert.equal(story.at(-1)?.outcome, 'SUCCEEDED');
    assert.equal(story.at(-1)?.msg, 'run finished: SUCCEEDED');
  });

  it('a run whose step fails: the step failed with its error code, and the run finished FAILED', async () => {
    const stack = await createStack(t, [{ id: 'build', command: 'exit 3' }]);
    const run = await triggerRun(t, stack.id);
    await waitForRunStatus(t, run.id, 'FAILED');
    const story = storyOf(run.id);
    assert.deepEqual(
      story.map((l) => [l.event, l.stepId ?? null]),
      [
        ['run.queued', null],
        ['step.queued', 'build'],
        ['step.started', 'build'],
        ['run.started', null],
        ['step.failed', 'build'],
        ['run.finished', null],
      ],
    );
    const failed = story.find((l) => l.event === 'step.failed')!;
    assert.equal(failed.errorCode, 'Engine:Script:FAILED');
    assert.equal(failed.workerId, 'test-worker-1');
    const finished = story.at(-1)!;
    assert.equal(finished.outcome, 'FAILED');
    assert.equal(finished.errorCode, 'Engine:Run:STEP_FAILED');
  });

  it('a transition rolled back is not told', async () => {
    const stack = await createStack(t, [{ id: 'gate', type: 'approval' }]);
    const run = await triggerRun(t, stack.id);
    const gate = await waitForStep(t, run.id, 'gate', 'WAITING_FOR_APPROVAL');
    await assert.rejects(
      t.db.transaction().execute(async (trx) => {
        await approveStep(trx, run.id, gate.id, 'someone');
        throw new Error('rolled back after the approval');
      }),
      /rolled back/,
    );
    assert.deepEqual(
      storyOf(run.id).map((l) => l.event),
      ['run.queued', 'step.waiting_for_approval', 'run.waiting_for_approval'],
    );
  });

  it('a read that succeeds is logged at debug; a write and a failed request at info or above', async () => {
    const auth = { authorization: `Bearer ${t.adminToken}` };
    const get = await logged.inject({ method: 'GET', url: '/projects', headers: auth });
    assert.equal(get.statusCode, 200);
    const missing = await logged.inject({ method: 'GET', url: '/projects/nope', headers: auth });
    assert.equal(missing.statusCode, 404);
    const post = await logged.inject({ method: 'POST', url: '/projects', headers: auth, payload: { data: { givenId: 'logged', name: 'Logged' } } });
    assert.equal(post.statusCode, 201);
    const served = (method: string, url: string) => lines.filter((l) => l.msg === 'served request' && l.method === method && l.url === url);
    assert.deepEqual(
      served('GET', '/projects').map((l) => l.level),
      [DEBUG],
    );
    assert.deepEqual(
      served('GET', '/projects/nope').map((l) => l.level),
      [INFO],
    );
    assert.deepEqual(
      served('POST', '/projects').map((l) => l.level),
      [INFO],
    );
  });
});
