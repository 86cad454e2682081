import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { cliUser, type CliUser } from './helpers/cli.ts';
import { startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

const TOKEN = 'plk_cli_credentials_test_token_0123456789abcdefghijkl';

/**
 * A host that is not loopback, in TEST-NET-1 (RFC 5737): nothing answers there, and nothing needs to,
 * since the CLI warns of plain http before it sends anything.
 */
const OUTSIDE = 'http://192.0.2.1:9';

/** Another server: it answers every request 401 and keeps the Authorization header it was sent. */
async function startOtherServer(): Promise<{ url: string; authorizations: (string | undefined)[]; server: Server }> {
  const authorizations: (string | undefined)[] = [];
  const server = createServer((request, response) => {
    authorizations.push(request.headers.authorization);
    response
      .writeHead(401, { 'content-type': 'application/json' })
      .end(JSON.stringify({ code: 'Auth:Credential:INVALID', message: 'The credential is not valid', requestId: 'other' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, authorizations, server };
}

const warnings = (stderr: string) => stderr.match(/is plain http/g)?.length ?? 0;

describe('the CLI keeps each saved key for the host it was saved for', () => {
  let database: TestDatabase;
  let plinth: PlinthProcess;
  let other: Awaited<ReturnType<typeof startOtherServer>>;
  let user: CliUser;

  before(async () => {
    database = await createTestDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-cli-credentials-'));
    plinth = await startPlinthProcess(
      { DATABASE_URL: database.url, PLINTH_ADMIN_TOKEN: TOKEN, PLINTH_DATA_DIR: dir },
      { command: 'api-server', readyTimeoutMs: 120_000 },
    );
    other = await startOtherServer();
    user = cliUser();
    await user.json(['login', '--host', plinth.baseUrl, '--with-token'], { input: TOKEN });
  });
  after(async () => {
    other?.server.close();
    await plinth?.stop();
    await database.drop();
  });

  it('login saves the key with the origin it was checked against', () => {
    const saved = JSON.parse(readFileSync(path.join(user.configHome, 'plinth', 'credentials.json'), 'utf8'));
    assert.deepEqual(saved, { keys: { default: { host: plinth.baseUrl, token: TOKEN } } });
  });

  it('a --host or PLINTH_HOST of another origin gets no request and the command exits 9, saying how to log in there', async () => {
    const ways: [string[], Record<string, string>][] = [
      [['whoami', '--host', other.url], {}],
      [['whoami'], { PLINTH_HOST: other.url }],
    ];
    for (const [args, env] of ways) {
      const refused = await user.run(args, { env });
      assert.equal(refused.code, 9, refused.stderr);
      assert.match(refused.stderr, new RegExp(`saved for ${plinth.baseUrl}, not ${other.url}.*plinth login --host ${other.url}`));
    }
    // The same server under another name is another origin: the key was not saved for it.
    assert.equal((await user.run(['whoami', '--host', plinth.baseUrl.replace('127.0.0.1', 'localhost')])).code, 9);
    assert.deepEqual(other.authorizations, []);
    const same = await user.run(['whoami', '--host', `${plinth.baseUrl}/`]);
    assert.equal(same.code, 0, 'a path is not part of the origin');
    assert.equal(warnings(same.stderr), 0, 'plain http to loopback crosses no network');
  });

  it('a key given in PLINTH_TOKEN goes to the host named, whichever it is', async () => {
    const result = await user.run(['whoami', '--host', other.url], { env: { PLINTH_TOKEN: 'plk_given_for_this_invocation' } });
    assert.equal(result.code, 3);
    assert.equal(warnings(result.stderr), 0);
    assert.deepEqual(other.authorizations.splice(0), ['Bearer plk_given_for_this_invocation']);
  });

  it('pointing a context at another host does not carry its key along', async () => {
    const set = await user.run(['context', 'set', '--host', other.url]);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stderr, new RegExp(`stays bound to ${plinth.baseUrl}`));
    assert.equal((await user.run(['whoami'])).code, 9);
    assert.deepEqual(other.authorizations, []);
    await user.json(['context', 'set', '--host', plinth.baseUrl]);
    assert.equal((await user.json(['whoami'])).email, 'admin@localhost');
    const listed = await user.json(['context', 'list']);
    assert.equal(listed[0].keyHost, plinth.baseUrl);
  });

  it("a credentials.json of the older form is bound to its context's host, once, and refused elsewhere", async () => {
    const old = cliUser();
    const dir = path.join(old.configHome, 'plinth');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ current: 'default', contexts: { default: { host: plinth.baseUrl }, lost: {} } }));
    writeFileSync(path.join(dir, 'credentials.json'), JSON.stringify({ tokens: { default: TOKEN, lost: TOKEN } }), { mode: 0o600 });
    assert.equal((await old.json(['whoami'])).email, 'admin@localhost');
    assert.deepEqual(JSON.parse(readFileSync(path.join(dir, 'credentials.json'), 'utf8')), {
      keys: { default: { host: plinth.baseUrl, token: TOKEN }, lost: { host: null, token: TOKEN } },
    });
    // A token whose context had no host has no binding to take: it goes nowhere until a new login.
    const lost = await old.run(['whoami', '--context', 'lost']);
    assert.equal(lost.code, 9);
    assert.match(lost.stderr, /saved for no host.*plinth login --host/);
    assert.deepEqual(other.authorizations, []);
  });

  // How often it warns, and for which hosts, is src/cli/host.test.ts; here, that both ways in warn before sending.
  it('plain http to another machine is warned of before anything is sent, by login and by any command', async () => {
    const stranger = cliUser();
    // Stopped once warned: whether 192.0.2.1 is unreachable at once or only after a timeout does not matter.
    const untilWarned = () => {
      let stopped = false;
      const onStderr = (stderr: string, pid: number) => {
        if (stopped || !warnings(stderr)) return;
        stopped = true;
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // It had exited already.
        }
      };
      return { timeoutMs: 30_000, onStderr };
    };
    const login = await stranger.run(['login', '--host', OUTSIDE, '--with-token'], { ...untilWarned(), input: TOKEN });
    const command = await stranger.run(['whoami', '--host', OUTSIDE], { ...untilWarned(), env: { PLINTH_TOKEN: TOKEN } });
    for (const { stderr } of [login, command]) {
      assert.equal(warnings(stderr), 1, stderr);
      assert.match(stderr, /warning: http:\/\/192\.0\.2\.1:9 is plain http/);
    }
    const shown = await stranger.run(['context', 'show', '--host', OUTSIDE], { env: { PLINTH_TOKEN: TOKEN } });
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(warnings(shown.stderr), 0, 'nothing is sent, nothing to warn of');
  });
});
