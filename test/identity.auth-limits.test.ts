import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

const TOKEN = 'plk_identity_auth_limits_test_token_0123456789abcdefgh';
const BLOCK_S = 10;
const BLOCK_MS = BLOCK_S * 1000;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** performance.now() when the request was sent and when its answer arrived. */
  sentAt: number;
  answeredAt: number;
}

interface Call {
  /** The source address: any of 127.0.0.0/8 reaches a server on 127.0.0.1, each a client of its own. */
  from: string;
  path?: string;
  authorization?: string;
  headers?: Record<string, string>;
}

const bearer = (token: string) => `Bearer ${token}`;
const basic = (token: string) => `Basic ${Buffer.from(`opentofu:${token}`).toString('base64')}`;
const wrongKey = (prefix = 'plk_') => prefix + randomBytes(32).toString('base64url');
const runCredential = () => `plr_${randomBytes(32).toString('base64url')}`;

/**
 * Whether the block that `blocker`'s failure started certainly still held when `answer` was decided.
 * The server started it while `blocker` was in flight and decided `answer` while that was in flight: if
 * `answer` arrived less than BLOCK_S after `blocker` was sent, the block cannot have ended, however slow
 * the machine. The window (an hour) never ends within a test, so only blocks depend on timing.
 */
const stillBlocked = (blocker: Answer, answer: Answer) => answer.answeredAt < blocker.sentAt + BLOCK_MS;

const ADDRESS_BLOCKED = /"address":"([^"]+)".*blocked an address after failed authentications/g;
const IGNORED_FORWARDING = /forwarding header that is ignored/g;

// Source addresses other than 127.0.0.1 need Linux, which routes all of 127.0.0.0/8 to loopback.
describe('failed authentications are refused per address and per key prefix, valid keys never', {
  skip: process.platform !== 'linux' && 'needs every 127.0.0.0/8 address on loopback (Linux)',
}, () => {
  let database: TestDatabase;
  let plinth: PlinthProcess;

  /** One request over a connection of its own from `from`. */
  const call = ({ from, path = '/auth/whoami', authorization, headers = {} }: Call) =>
    new Promise<Answer>((resolve, reject) => {
      const url = new URL(path, plinth.baseUrl);
      const sentAt = performance.now();
      const request = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          localAddress: from,
          agent: false,
          headers: { ...headers, ...(authorization ? { authorization } : {}) },
        },
        (response) => {
          let text = '';
          response
            .setEncoding('utf8')
            .on('data', (chunk) => (text += chunk))
            .on('end', () => {
              resolve({
                status: response.statusCode!,
                headers: response.headers,
                body: text ? JSON.parse(text) : undefined,
                sentAt,
                answeredAt: performance.now(),
              });
            });
        },
      );
      request.on('error', reject).end();
    });

  const assertLimited = (answer: Answer) => {
    assert.equal(answer.status, 429, JSON.stringify(answer.body));
    assert.equal(answer.body.code, 'Auth:Credential:TOO_MANY_FAILURES');
    assert.equal(answer.body.requestId, answer.headers['x-request-id']);
    const retryAfter = Number(answer.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= BLOCK_S, `Retry-After ${answer.headers['retry-after']}`);
    return retryAfter;
  };

  /**
   * assertBlockedBy: `answer` is a 429 while the block `blocker` started must still hold; past that (a
   * machine slow enough for the block to end) it may be the 429 or, the block over, `otherwise`.
   */
  const assertBlockedBy = (blocker: Answer, answer: Answer, otherwise: number) => {
    if (stillBlocked(blocker, answer) || answer.status === 429) return assertLimited(answer);
    assert.equal(answer.status, otherwise, JSON.stringify(answer.body));
    return undefined;
  };

  /** The process's output once `pattern` appears in it (log lines travel through a pipe). */
  const outputWith = async (pattern: RegExp) => {
    for (let waited = 0; !new RegExp(pattern.source).test(plinth.output()); waited += 50) {
      if (waited > 30_000) assert.fail(`never logged: ${pattern}`);
      await sleep(50);
    }
    return plinth.output();
  };

  before(async () => {
    database = await createTestDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-auth-limits-'));
    plinth = await startPlinthProcess(
      {
        DATABASE_URL: database.url,
        PLINTH_ADMIN_TOKEN: TOKEN,
        PLINTH_DATA_DIR: dir,
        PLINTH_AUTH_FAILURES_PER_ADDRESS: '10',
        PLINTH_AUTH_FAILURES_PER_KEY_PREFIX: '5',
        PLINTH_AUTH_FAILURE_WINDOW_S: '3600',
        PLINTH_AUTH_BLOCK_S: String(BLOCK_S),
        PLINTH_AUTH_LIMIT_ENTRIES: '40',
        PLINTH_TRUSTED_PROXIES: '127.0.0.5',
      },
      { command: 'api-server', readyTimeoutMs: 120_000 },
    );
  });
  after(async () => {
    await plinth?.stop();
    await database?.drop();
  });

  it('wrong keys sent at 60 a second from one address: exactly the first 10 get 401, each after that 429 with Retry-After; a valid key from another address gets 200 all along', async () => {
    const answers: Answer[] = [];
    const valid: Promise<Answer>[] = [];
    const started = performance.now();
    // One at a time, each sent once the one before is answered (and not before its 1/60 s slot): which
    // answer is which then depends on the order of the failures alone, never on how fast they go.
    for (let i = 0; i < 40; i++) {
      await sleep(Math.max(0, started + (i * 1000) / 60 - performance.now()));
      if (i % 5 === 0) valid.push(call({ from: '127.0.0.3', authorization: bearer(TOKEN) }));
      answers.push(await call({ from: '127.0.0.2', authorization: bearer(wrongKey()) }));
    }
    assert.deepEqual(
      answers.slice(0, 10).map((a) => a.status),
      Array(10).fill(401),
    );
    const blocker = answers[9]!;
    for (const answer of answers.slice(10)) {
      if (!stillBlocked(blocker, answer)) break;
      assertLimited(answer);
    }
    assert.deepEqual(
      (await Promise.all(valid)).map((a) => a.status),
      Array(8).fill(200),
    );

    // Decided: a blocked address is answered before its key is looked at, a valid key included; else a
    // guesser there would still learn which guess is right. It waits Retry-After like any other.
    const retryAfter = assertBlockedBy(blocker, await call({ from: '127.0.0.2', authorization: bearer(TOKEN) }), 200);
    if (retryAfter !== undefined) await sleep(retryAfter * 1000);
    assert.equal((await call({ from: '127.0.0.2', authorization: bearer(TOKEN) })).status, 200);
    assert.equal((await call({ from: '127.0.0.2' })).status, 401, 'no credential is not a failure: never refused with 429');
    assert.deepEqual(
      [...(await outputWith(ADDRESS_BLOCKED)).matchAll(ADDRESS_BLOCKED)].map((m) => m[1]),
      ['127.0.0.2'],
    );
  });

  it('a key prefix over its limit still lets its valid key in from anywhere; one more failure with it blocks that address', async () => {
    const prefix = TOKEN.slice(0, 10);
    const failures: Answer[] = [];
    for (let i = 0; i < 5; i++) failures.push(await call({ from: `127.0.0.1${i}`, authorization: bearer(wrongKey(prefix)) }));
    assert.deepEqual(
      failures.map((a) => a.status),
      Array(5).fill(401),
    );
    assert.equal((await call({ from: '127.0.0.15', authorization: bearer(TOKEN) })).status, 200);
    const more = await call({ from: '127.0.0.16', authorization: bearer(wrongKey(prefix)) });
    assert.equal(more.status, 401);
    const valid = await call({ from: '127.0.0.16', authorization: bearer(TOKEN) });
    if (stillBlocked(failures[4]!, more)) assertBlockedBy(more, valid, 200);
    else assert.ok([200, 429].includes(valid.status), `${valid.status}`);
    for (let i = 0; i < 2; i++)
      assert.equal((await call({ from: '127.0.0.17', authorization: bearer(wrongKey()) })).status, 401, 'another prefix is not affected');
  });

  it('the state backend is limited the same way; a run credential is exempt there only, and refused unread anywhere else', async () => {
    const failures: Answer[] = [];
    for (let i = 0; i < 10; i++) {
      const token = i % 2 ? wrongKey() : runCredential();
      failures.push(await call({ from: '127.0.0.20', path: '/state-backend/stack-none', authorization: basic(token) }));
    }
    assert.deepEqual(
      failures.map((a) => a.status),
      Array(10).fill(401),
    );
    const blocker = failures[9]!;
    assertBlockedBy(blocker, await call({ from: '127.0.0.20', path: '/state-backend/stack-none', authorization: basic(wrongKey()) }), 401);
    assertBlockedBy(blocker, await call({ from: '127.0.0.20', path: '/stacks', authorization: bearer(TOKEN) }), 200);
    // Off the state backend a run credential can never be valid: no exemption there.
    assertBlockedBy(blocker, await call({ from: '127.0.0.20', path: '/stacks', authorization: bearer(runCredential()) }), 401);
    // On it, still looked up: the worker host's address is every tenant's steps' address.
    assert.equal((await call({ from: '127.0.0.20', path: '/state-backend/stack-none', authorization: basic(runCredential()) })).status, 401);
    assert.equal((await call({ from: '127.0.0.20', path: '/state-backend/stack-none', authorization: bearer(runCredential()) })).status, 401);
    assert.notEqual((await call({ from: '127.0.0.21', path: '/state-backend/stack-none', authorization: basic(TOKEN) })).status, 429);

    const elsewhere: Answer[] = [];
    for (let i = 0; i < 10; i++) elsewhere.push(await call({ from: '127.0.0.22', path: '/auth/whoami', authorization: bearer(runCredential()) }));
    assert.deepEqual(
      elsewhere.map((a) => `${a.status} ${a.body.code}`),
      Array(10).fill('401 Auth:Credential:INVALID'),
    );
    assertBlockedBy(elsewhere[9]!, await call({ from: '127.0.0.22', authorization: bearer(TOKEN) }), 200);
  });

  it('behind a trusted proxy the client is the one X-Forwarded-For names, without its port; from anyone else the header is ignored, and warned of once', async () => {
    // Sent first: the warning is checked once a later warning line shows it would be in the output by then.
    for (let i = 0; i < 2; i++) {
      assert.equal((await call({ from: '127.0.0.6', authorization: bearer(TOKEN), headers: { 'x-forwarded-for': '203.0.113.7' } })).status, 200);
    }
    const viaProxy = (client: string, authorization: string) => call({ from: '127.0.0.5', authorization, headers: { 'x-forwarded-for': client } });
    const failures: Answer[] = [];
    for (let i = 0; i < 10; i++) failures.push(await viaProxy('203.0.113.7', bearer(wrongKey())));
    assert.deepEqual(
      failures.map((a) => a.status),
      Array(10).fill(401),
    );
    assertBlockedBy(failures[9]!, await viaProxy('203.0.113.7', bearer(TOKEN)), 200);
    assert.equal((await viaProxy('203.0.113.8', bearer(TOKEN))).status, 200, 'another client behind the same proxy');
    assert.equal((await call({ from: '127.0.0.6', authorization: bearer(TOKEN), headers: { 'x-forwarded-for': '203.0.113.7' } })).status, 200);

    // One client, a new source port on each connection: one address all the same.
    const ports: Answer[] = [];
    for (let i = 0; i < 10; i++) ports.push(await viaProxy(`203.0.113.9:${40_000 + i}`, bearer(wrongKey())));
    assert.deepEqual(
      ports.map((a) => a.status),
      Array(10).fill(401),
    );
    assertBlockedBy(ports[9]!, await viaProxy('203.0.113.9:50000', bearer(TOKEN)), 200);

    const output = await outputWith(/"address":"203\.0\.113\.9:\d+".*blocked an address/);
    assert.equal(output.match(IGNORED_FORWARDING)?.length, 1, output);
    assert.match(output, /"peer":"127\.0\.0\.6".*127\.0\.0\.6 is not in PLINTH_TRUSTED_PROXIES/);
  });

  it('memory is capped: past PLINTH_AUTH_LIMIT_ENTRIES addresses, the stalest one not blocked is forgotten, a blocked one is kept', async () => {
    for (let i = 0; i < 9; i++) assert.equal((await call({ from: '127.0.0.31', authorization: bearer(wrongKey()) })).status, 401);
    const failures: Answer[] = [];
    for (let i = 0; i < 10; i++) failures.push(await call({ from: '127.0.0.30', authorization: bearer(wrongKey()) }));
    assert.deepEqual(
      failures.map((a) => a.status),
      Array(10).fill(401),
    );
    for (let i = 1; i <= 50; i++) assert.equal((await call({ from: `127.0.1.${i}`, authorization: bearer(wrongKey()) })).status, 401);
    assertBlockedBy(failures[9]!, await call({ from: '127.0.0.30', authorization: bearer(TOKEN) }), 200);
    // Its tenth failure is its first again: 127.0.0.31 was forgotten, with the nine before.
    assert.equal((await call({ from: '127.0.0.31', authorization: bearer(wrongKey()) })).status, 401);
    assert.equal((await call({ from: '127.0.0.31', authorization: bearer(TOKEN) })).status, 200);
  });
});
