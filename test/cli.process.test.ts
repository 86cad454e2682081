import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isAlive, isListening, PLINTH_BIN, ROOT, startPlinthProcess, startScriptNodeFlags, type PlinthProcess } from './helpers/plinth-process.ts';

const TOKEN = 'plk_cli_process_test_token_0123456789abcdefghijklmnop';

/** Waits until some session of the database is blocked on a lock: the request is in flight. */
async function waitForBlockedQuery(client: pg.Client, database: string) {
  for (let i = 0; i < 100; i++) {
    const { rows } = await client.query(`select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'`, [database]);
    if (rows[0].n > 0) return;
    await sleep(50);
  }
  throw new Error('no request reached the database');
}

describe('plinth serve as a real process (DATABASE_URL)', () => {
  let database: TestDatabase;
  let plinth: PlinthProcess | undefined;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    if (plinth && isAlive(plinth.pid)) plinth.child.kill('SIGKILL');
    await database.drop();
  });

  it('starts, migrates, bootstraps PLINTH_ADMIN_TOKEN and answers whoami over HTTP', async () => {
    plinth = await startPlinthProcess({ DATABASE_URL: database.url, PLINTH_ADMIN_TOKEN: TOKEN }, { readyTimeoutMs: 120_000 });
    const res = await fetch(`${plinth.baseUrl}/auth/whoami`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.data.globalRole, 'SUPER_ADMIN');
    assert.equal(body.data.organizationName, 'Default');
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    const anonymous = await fetch(`${plinth.baseUrl}/auth/whoami`);
    assert.equal(anonymous.status, 401);
  });

  it('on SIGTERM, a request in flight completes and the process exits 0, leaving nothing running', async () => {
    assert.ok(plinth);
    const port = Number(new URL(plinth.baseUrl).port);
    const blocker = new pg.Client({ connectionString: database.url });
    blocker.on('error', () => {});
    await blocker.connect();
    try {
      // Hold the table the next request reads, so it waits inside the database until we let go.
      // (Its credential may come from memory: the credential cache.)
      await blocker.query('begin');
      await blocker.query('lock table organizations in access exclusive mode');
      const inFlight = fetch(`${plinth.baseUrl}/organizations`, { headers: { authorization: `Bearer ${TOKEN}` } });
      await waitForBlockedQuery(blocker, database.name);
      plinth.child.kill('SIGTERM');
      await sleep(300);
      assert.ok(isAlive(plinth.pid), `plinth quit with a request in flight:\n${plinth.output()}`);
      await blocker.query('commit');
      const res = await inFlight;
      assert.equal(res.status, 200);
      assert.equal((await res.json()).data[0].name, 'Default');
    } finally {
      await blocker.end();
    }
    const { code, signal } = await plinth.stop();
    assert.equal(signal, null, plinth.output());
    assert.equal(code, 0, plinth.output());
    assert.equal(isAlive(plinth.pid), false);
    assert.equal(await isListening(port), false);
  });
});

describe('plinth migrate and usage', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(() => database.drop());

  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [PLINTH_BIN, ...args], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', ...env }, encoding: 'utf8', timeout: 60_000 });

  it('plinth migrate applies nothing on an up-to-date database and exits 0', () => {
    const result = run(['migrate'], { DATABASE_URL: database.url });
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /database is up to date/);
  });

  it('npm start and the plinth executable give node the same flags', () => {
    const shebang = readFileSync(PLINTH_BIN, 'utf8').split('\n')[0];
    assert.equal(shebang, ['#!/usr/bin/env -S node', ...startScriptNodeFlags()].join(' '));
  });

  it('a user command writes V8 code cache beside the build and replaces one V8 turns down; process commands run', () => {
    const cache = path.join(realpathSync(path.join(ROOT, 'dist', 'current')), 'cli.cjs.cache');
    const garbage = randomBytes(4096);
    writeFileSync(cache, garbage);
    const first = run(['version']);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /^cli /m);
    const written = readFileSync(cache);
    assert.ok(written.length > 16_384 && !written.subarray(0, 4096).equals(garbage), 'the unusable cache was replaced');
    rmSync(cache);
    const again = run(['--help']);
    assert.equal(again.status, 0, again.stderr);
    assert.ok(statSync(cache).size > 16_384, 'a run without a cache writes one');
    // The process commands import the server's bundle, which a script run by node:vm cannot.
    const migrate = run(['migrate'], { DATABASE_URL: database.url });
    assert.equal(migrate.status, 0, migrate.stderr);
    // Nor can a user command: the bundle's only import() is the process commands' one.
    const imports = readFileSync(path.join(path.dirname(cache), 'cli.cjs'), 'utf8').match(/\bimport\([^)]*\)/g);
    assert.deepEqual(imports, ['import("./server-process.js")']);
  });

  it('a command whose reader has gone away ends quietly with exit 141, as a closed pipe stops a program', async () => {
    const child = spawn(process.execPath, [PLINTH_BIN, 'completion', 'bash'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    // Closed before the command starts: its first write finds nobody reading (EPIPE).
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const [code] = await once(child, 'close');
    assert.equal(code, 141, stderr);
    assert.equal(stderr, '');
  });

  it('help wraps at the width of the terminal it is written to, and at 80 columns elsewhere', () => {
    const description = 'a stack in --project and --env, with its change and destroy pipelines';
    const piped = run(['stack', 'create', '--help']);
    assert.ok(piped.stdout.includes(`\n${description}\n`), piped.stdout);
    const command = [process.execPath, PLINTH_BIN, 'stack', 'create', '--help'].map((word) => `'${word}'`).join(' ');
    const terminal = spawnSync('script', ['-qec', `stty cols 60; ${command}`, '/dev/null'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.equal(terminal.status, 0, terminal.stderr);
    assert.ok(terminal.stdout.replace(/\r/g, '').includes(`\n${description.replace(' pipelines', '\npipelines')}\n`), terminal.stdout);
  });

  it('an unknown command prints the usage and exits 2', () => {
    const result = run(['bogus'], { DATABASE_URL: database.url });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /Usage: plinth <command>/);
    for (const command of ['serve', 'api-server', 'worker', 'migrate']) assert.match(result.stderr, new RegExp(`\\b${command}\\b`));
  });
});
