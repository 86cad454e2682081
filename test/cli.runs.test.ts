import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { cliUser, type CliUser } from './helpers/cli.ts';
import { FAST_ENGINE_ENV } from './helpers/engine.ts';
import { startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';
import { startTcpProxy } from './helpers/tcp-proxy.ts';

const TOKEN = 'plk_cli_runs_test_token_0123456789abcdefghijklmnopqrst';

/** A change pipeline that writes a line, waits for a person, then writes another. */
const GATED = {
  change: {
    steps: [
      { id: 'build', name: 'Build', type: 'script', with: { command: 'echo hello-from-build' } },
      { id: 'approve', name: 'Approve', type: 'approval', needs: ['build'] },
      { id: 'apply', name: 'Apply', type: 'script', needs: ['approve'], with: { command: 'echo applied-after-approval' } },
    ],
  },
};

describe('the plinth CLI against a real Plinth: login, runs, approvals', () => {
  let database: TestDatabase;
  let plinth: PlinthProcess;
  let user: CliUser;
  let dir: string;
  let projectId: string;
  let envId: string;

  const stackWith = async (name: string, pipelines: object) => {
    const file = path.join(dir, `${name}.yaml`);
    writeFileSync(file, JSON.stringify(pipelines));
    return (await user.json(['stack', 'create', '--env', envId, '--name', name, '-f', file])).id as string;
  };
  const startedRunId = (stderr: string) => /started run (\S+)/.exec(stderr)?.[1];

  before(async () => {
    database = await createTestDatabase();
    dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-cli-runs-'));
    // Generous: under a full parallel npm test a start can take far longer than on a quiet machine.
    plinth = await startPlinthProcess(
      { ...FAST_ENGINE_ENV, DATABASE_URL: database.url, PLINTH_ADMIN_TOKEN: TOKEN, PLINTH_DATA_DIR: dir },
      { readyTimeoutMs: 120_000 },
    );
    user = cliUser();
  });
  after(async () => {
    await plinth?.stop();
    await database.drop();
  });

  it('login --with-token checks the key, stores it in a 0600 file and makes the context current', async () => {
    const login = await user.run(['login', '--host', plinth.baseUrl, '--with-token'], { input: `${TOKEN}\n` });
    assert.equal(login.code, 0, login.stderr);
    assert.match(login.stderr, /logged in to http:\/\/127\.0\.0\.1:\d+ as admin@localhost/);
    const credentials = path.join(user.configHome, 'plinth', 'credentials.json');
    assert.equal(statSync(credentials).mode & 0o777, 0o600);
    assert.deepEqual(JSON.parse(readFileSync(credentials, 'utf8')).keys.default, { host: plinth.baseUrl, token: TOKEN });
    const whoami = await user.json(['whoami']);
    assert.equal(whoami.globalRole, 'SUPER_ADMIN');
    const context = await user.json(['context', 'show']);
    assert.equal(context.host, plinth.baseUrl);
    assert.equal(context.organization, whoami.organizationId);
  });

  it('a wrong key is refused at login with exit 3, and nothing is stored', async () => {
    const stranger = cliUser();
    const login = await stranger.run(['login', '--host', plinth.baseUrl, '--with-token'], { input: 'plk_not_a_real_key_0123456789abcdefghijklmnop' });
    assert.equal(login.code, 3);
    assert.match(login.stderr, /run plinth login/);
    assert.equal((await stranger.run(['whoami'])).code, 3);
  });

  it('project, environment and stack come from the CLI alone', async () => {
    projectId = (await user.json(['project', 'create', '--given-id', 'cli-runs', '--name', 'CLI runs'])).id;
    await user.json(['context', 'set', '--project', projectId]);
    envId = (await user.json(['env', 'create', '--given-id', 'dev', '--name', 'Dev'])).id;
    assert.equal((await user.json(['env', 'get', envId])).projectId, projectId);
  });

  it('run start --follow streams the logs and exits 6 at the approval; approve from a second command; run wait exits 0', async () => {
    const stack = await stackWith('gated', GATED);
    const follow = await user.run(['run', 'start', stack, '--follow']);
    assert.equal(follow.code, 6, follow.stderr + follow.stdout);
    assert.match(follow.stdout, /\[build\] hello-from-build/);
    assert.doesNotMatch(follow.stdout, /applied-after-approval/);
    assert.match(follow.stderr, /waiting for approval: plinth run approve/);
    const runId = startedRunId(follow.stderr)!;
    assert.ok(runId, follow.stderr);

    const approved = await user.json(['run', 'approve', runId]);
    assert.equal(approved.stepId, 'approve');
    assert.equal(approved.status, 'SUCCEEDED');

    const waited = await user.run(['run', 'wait', runId, '-o', 'json', '--timeout', '60s']);
    assert.equal(waited.code, 0, waited.stderr);
    assert.equal(JSON.parse(waited.stdout).status, 'SUCCEEDED');
    const lines = await user.json(['run', 'logs', runId]);
    assert.deepEqual(
      lines.map((l: { stepId: string; line: string }) => `${l.stepId}:${l.line}`),
      ['build:hello-from-build', 'apply:applied-after-approval'],
    );
  });

  it('a failed run exits 5, a cancelled one 8, a wait that runs out of time 7', async () => {
    const failing = await stackWith('failing', {
      change: { steps: [{ id: 'boom', name: 'Boom', type: 'script', with: { command: 'echo about-to-fail; exit 3' } }] },
    });
    const failed = await user.run(['run', 'start', failing, '--follow']);
    assert.equal(failed.code, 5, failed.stderr);
    assert.match(failed.stdout, /\[boom\] about-to-fail/);
    // Why, without a second command: the failed step, its error code and message, and its last lines.
    assert.match(failed.stderr, /step "boom" \(script\) failed: Engine:Script:FAILED\n {2}The command exited with code 3\n/);
    assert.match(failed.stderr, /last 1 line of "boom":\n {2}about-to-fail\n/);
    const failedRunId = startedRunId(failed.stderr)!;
    const explained = await user.run(['run', 'logs', failedRunId, '--failed']);
    assert.equal(explained.code, 5, explained.stderr);
    assert.match(
      explained.stdout,
      /step "boom" \(script\) failed: Engine:Script:FAILED\n {2}The command exited with code 3\nlast 1 line of "boom":\n {2}about-to-fail\n$/,
    );
    const summary = await user.run(['run', 'get', failedRunId]);
    assert.match(summary.stdout, /^status +FAILED$/m);
    assert.match(summary.stdout, /^stack +failing$/m, 'the stack by name');
    assert.doesNotMatch(summary.stdout, /engineWorkflowId|variantId|queueState/, 'no internals in the table');
    assert.match(summary.stdout, /The command exited with code 3/);
    assert.equal((await user.json(['run', 'get', failedRunId])).engineWorkflowId !== undefined, true, 'JSON keeps the whole record');

    const gated = await stackWith('cancelled', GATED);
    const started = await user.run(['run', 'start', gated, '--wait']);
    assert.equal(started.code, 6, started.stderr);
    const runId = startedRunId(started.stderr)!;
    const cancelled = await user.json(['run', 'cancel', runId]);
    assert.equal(cancelled.id, runId);
    assert.equal((await user.run(['run', 'wait', runId])).code, 8);

    const slow = await stackWith('slow', { change: { steps: [{ id: 'sleep', name: 'Sleep', type: 'script', with: { command: 'sleep 30' } }] } });
    const timedOut = await user.run(['run', 'start', slow, '--wait', '--timeout', '1s']);
    assert.equal(timedOut.code, 7, timedOut.stderr);
    assert.match(timedOut.stderr, /timed out/);
    await user.json(['run', 'cancel', startedRunId(timedOut.stderr)!]);
  });

  it('--follow rides out 12 s without a connection, says it is reconnecting, and loses no line', async () => {
    const proxy = await startTcpProxy(Number(new URL(plinth.baseUrl).port));
    try {
      const command = 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line-$i; sleep 1.5; done';
      const stack = await stackWith('blip', { change: { steps: [{ id: 'count', name: 'Count', type: 'script', with: { command } }] } });
      let cut: Promise<void> | undefined;
      const follow = await user.run(['run', 'start', stack, '--follow', '--host', `http://127.0.0.1:${proxy.port}`], {
        env: { PLINTH_TOKEN: TOKEN },
        timeoutMs: 90_000,
        onStderr: (stderr) => {
          if (cut === undefined && startedRunId(stderr)) cut = new Promise((resolve) => setTimeout(resolve, 2000)).then(() => proxy.cut(12_000));
        },
      });
      await cut;
      assert.equal(follow.code, 0, follow.stderr);
      assert.match(follow.stderr, /lost the connection to http:\/\/127\.0\.0\.1:\d+ \(.+\); reconnecting for up to 5 minutes/);
      assert.match(follow.stderr, /reconnected to http:\/\/127\.0\.0\.1:\d+/);
      const lines = follow.stdout.split('\n').filter((l) => l.startsWith('[count]'));
      assert.deepEqual(
        lines,
        Array.from({ length: 10 }, (_, i) => `[count] line-${i + 1}`),
      );
    } finally {
      await proxy.close();
    }
  });

  it('run wait --timeout holds while the API does not answer: exit 7 when it runs out, not five minutes later', async () => {
    const proxy = await startTcpProxy(Number(new URL(plinth.baseUrl).port));
    try {
      const stack = await stackWith('unanswered', { change: { steps: [{ id: 'sleep', name: 'Sleep', type: 'script', with: { command: 'sleep 30' } }] } });
      const run = await user.json(['run', 'start', stack]);
      const cut = proxy.cut(12_000);
      const started = Date.now();
      const waited = await user.run(['run', 'wait', run.id, '--timeout', '3s', '--host', `http://127.0.0.1:${proxy.port}`], { env: { PLINTH_TOKEN: TOKEN } });
      assert.equal(waited.code, 7, waited.stderr);
      assert.match(waited.stderr, /reconnecting/);
      assert.ok(Date.now() - started < 10_000, `exited after ${Date.now() - started} ms`);
      await cut;
      await user.json(['run', 'cancel', run.id]);
    } finally {
      await proxy.close();
    }
  });

  it('--watch prints a run until it ends, and a run list until Ctrl-C', async () => {
    // The run waits for its approval until the watch has printed it twice: how long the CLI takes to
    // start on a busy machine does not decide whether it sees the run going on.
    const stack = await stackWith('watched', { change: { steps: [{ id: 'gate', name: 'Gate', type: 'approval' }] } });
    const run = await user.json(['run', 'start', stack]);
    let approval: Promise<unknown> | undefined;
    const watched = await user.run(['run', 'get', run.id, '--watch'], {
      onStdout: (stdout) => {
        if (!approval && stdout.split(/^id +/m).length - 1 >= 2) approval = user.json(['run', 'approve', run.id]);
      },
      timeoutMs: 60_000,
    });
    await approval;
    assert.equal(watched.code, 0, watched.stderr);
    const views = watched.stdout.split(/^id +/m).length - 1;
    assert.ok(views >= 3, `printed ${views} time(s) while the run went on`);
    assert.match(watched.stdout, /^status +SUCCEEDED$/m, 'the last view is the ended run');

    let printed = 0;
    const listed = await user.run(['run', 'list', '--watch', '--stack', 'watched'], {
      onStdout: (stdout, pid) => {
        printed = stdout.split(/^ID +STATUS/m).length - 1;
        if (printed >= 2) process.kill(pid, 'SIGINT');
      },
      timeoutMs: 30_000,
    });
    assert.equal(listed.code, 130, listed.stderr);
    assert.ok(printed >= 2);
  });

  it('an interrupted follow exits 130', async () => {
    const slow = await stackWith('interrupted', { change: { steps: [{ id: 'sleep', name: 'Sleep', type: 'script', with: { command: 'sleep 30' } }] } });
    let runId: string | undefined;
    // SIGINT once the run has started: the command is then following it, with its handler in place.
    const following = await user.run(['run', 'start', slow, '--follow'], {
      onStderr: (stderr, pid) => {
        if (runId !== undefined) return;
        runId = startedRunId(stderr);
        if (runId) process.kill(pid, 'SIGINT');
      },
    });
    assert.equal(following.code, 130, following.stderr);
    await user.json(['run', 'cancel', runId!]);
  });
});
