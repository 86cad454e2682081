import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { freePort, isAlive, ROOT, startPlinthProcess } from './helpers/plinth-process.ts';

// `npm start` as people run it: with the embedded PostgreSQL (no DATABASE_URL), in a data directory
// shared by the file's tests (the cluster is created once), stopped as a terminal or a service manager
// stops it.

/** The session (its keeper's) of the embedded PostgreSQL's postmaster, from its pid file while it runs. */
function postgresSession(dataDir: string): number {
  const file = path.join(dataDir, 'pg', 'postmaster.pid');
  assert.ok(existsSync(file), 'the embedded PostgreSQL runs');
  return sessionOf(Number(readFileSync(file, 'utf8').split('\n')[0]))!;
}

function sessionOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
  } catch {
    return undefined;
  }
}

/** Live processes of a session: the postmaster, its backends and its keeper, while any is left. */
function processesOfSession(session: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => sessionOf(pid) === session);
}

async function gone(session: number, timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = processesOfSession(session);
  while (left.length && Date.now() < deadline) {
    await sleep(100);
    left = processesOfSession(session);
  }
  return left;
}

/** The child processes of `pid` (npm's: the server, which the start script execs). */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

interface NpmStart {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm start` in a process group of its own, as a terminal runs a foreground job; resolves once `ready` shows in its output. */
async function npmStart(env: Record<string, string>, ready: RegExp): Promise<NpmStart> {
  const child = spawn('npm', ['start'], { cwd: ROOT, env: { ...serverEnv(), ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const deadline = Date.now() + 120_000;
  while (!ready.test(output)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      assert.fail(`npm start did not get ready:\n${output}`);
    }
    await sleep(100);
  }
  return { child, output: () => output, exited };
}

/** The test runner's environment without what would point the server elsewhere. */
function serverEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(DATABASE_URL|DATABASE_OWNER_URL|PORT|HOST|PLINTH_.*|LOG_.*|NODE_TEST_CONTEXT|TEST_DATABASE_URL)$/.test(key)) continue;
    env[key] = value;
  }
  return env;
}

/** A stack trace's frame line, or pg's internals spilled on a crash. */
const CRASH = /^\s+at |Unhandled 'error' event|57P01|terminating connection/m;

describe('npm start runs and stops like a service', { timeout: 300_000 }, () => {
  let dataDir: string;
  let env: Record<string, string>;
  const started: ChildProcess[] = [];
  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-service-'));
    env = { PLINTH_DATA_DIR: dataDir, PLINTH_PG_PORT: String(await freePort()), HOST: '127.0.0.1' };
  });
  after(async () => {
    for (const child of started) if (child.pid && isAlive(child.pid)) process.kill(-child.pid, 'SIGKILL');
    const pidFile = path.join(dataDir, 'pg', 'postmaster.pid');
    if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGINT');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('LOG_FORMAT=pretty: a banner and human lines; Ctrl-C (SIGINT to the process group) drains, says stopped, exits 0, and PostgreSQL stops', async () => {
    const port = await freePort();
    const npm = await npmStart({ ...env, PORT: String(port), LOG_FORMAT: 'pretty' }, /stop {9}Ctrl-C/);
    started.push(npm.child);
    const url = `http://127.0.0.1:${port}`;
    assert.match(npm.output(), new RegExp(`^Plinth is running at ${url}$`, 'm'));
    assert.match(npm.output(), new RegExp(`^  admin token  ${path.join(dataDir, 'admin-token')}$`, 'm'));
    assert.match(npm.output(), /^\d\d:\d\d:\d\d INFO {2}plinth started command=serve url=http:\/\/127\.0\.0\.1:\d+$/m);
    assert.doesNotMatch(npm.output(), /^\{"level"/m, 'no JSON lines');
    assert.equal((await fetch(`${url}/health`)).status, 200);
    const session = postgresSession(dataDir);
    assert.notEqual(session, sessionOf(npm.child.pid!), "PostgreSQL is not in the terminal's session, out of reach of its Ctrl-C");

    const before = npm.output().length;
    process.kill(-npm.child.pid!, 'SIGINT');
    const { code, signal } = await npm.exited;
    const tail = npm.output().slice(before);
    assert.equal(signal, null, npm.output());
    assert.equal(code, 0, npm.output());
    assert.doesNotMatch(tail, CRASH);
    assert.deepEqual(
      tail
        .split('\n')
        .filter((line) => /\w/.test(line))
        .map((line) => line.replace(/^\d\d:\d\d:\d\d /, '')),
      ['INFO  stopped signal=SIGINT'],
    );
    assert.deepEqual(await gone(session, 5_000), [], 'the embedded PostgreSQL stopped with Plinth');
  });

  it('not a terminal: JSON lines; SIGTERM to the npm process stops the server it started, which exits 0', async () => {
    const npm = await npmStart({ ...env, PORT: String(await freePort()) }, /"msg":"plinth started"/);
    started.push(npm.child);
    const json = npm
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line));
    assert.ok(
      json.some((line) => line.msg === 'plinth started' && line.level === 30),
      npm.output(),
    );
    assert.doesNotMatch(npm.output(), /Plinth is running at/, 'no banner among JSON lines');
    const [server] = childrenOf(npm.child.pid!);
    assert.ok(server && isAlive(server), 'npm runs the server');
    const session = postgresSession(dataDir);

    npm.child.kill('SIGTERM');
    const { code } = await npm.exited;
    assert.equal(code, 0, npm.output());
    assert.equal(isAlive(server), false, 'the server did not outlive npm');
    assert.doesNotMatch(npm.output(), CRASH);
    assert.ok(
      npm
        .output()
        .split('\n')
        .some((line) => line.startsWith('{') && JSON.parse(line).msg === 'stopped'),
      npm.output(),
    );
    assert.deepEqual(await gone(session, 5_000), []);
  });

  it('the embedded PostgreSQL does not outlive a server killed with SIGKILL', async () => {
    const plinth = await startPlinthProcess(env, { readyTimeoutMs: 120_000 });
    started.push(plinth.child);
    const session = postgresSession(dataDir);
    plinth.child.kill('SIGKILL');
    await plinth.exited;
    assert.deepEqual(await gone(session, 15_000), [], 'PostgreSQL stopped once its keeper saw the server go');
  });
});
