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
const BLOCK_S = 5;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
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

describe('failed authentications are refused per address and per key prefix, valid keys never', () => {
  let database: TestDatabase;
  let plinth: PlinthProcess;

  /** One request over a connection of its own from `from`. */
  const call = ({ from, path = '/auth/whoami', authorization, headers = {} }: Call) =>
    new Promise<Answer>((resolve, reject) => {
      const url = new URL(path, plinth.baseUrl);
      const request = http.request(
        { host: url.hostname, port: url.port, path: url.pathname, localAddress: from, agent: false, headers: { ...headers, ...(authorization ? { authorization } : {}) } },
        (response) => {
          let text = '';
          response.setEncoding('utf8').on('data', (chunk) => (text += chunk)).on('end', () => {
            resolve({ status: response.statusCode!, headers: response.headers, body: text ? JSON.parse(text) : undefined });
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

  before(async () => {
    database = await createTestDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-auth-limits-'));
    plinth = await startPlinthProcess({
      DATABASE_URL: database.url,
      PLINTH_ADMIN_TOKEN: TOKEN,
      PLINTH_DATA_DIR: dir,
      PLINTH_AUTH_FAILURES_PER_ADDRESS: '10',
      PLINTH_AUTH_FAILURES_PER_KEY_PREFIX: '5',
      PLINTH_AUTH_FAILURE_WINDOW_S: '60',
      PLINTH_AUTH_BLOCK_S: String(BLOCK_S),
      PLINTH_AUTH_LIMIT_ENTRIES: '40',
      PLINTH_TRUSTED_PROXIES: '127.0.0.5',
    }, { command: 'api', readyTimeoutMs: 120_000 });
  });
  after(async () => {
    await plinth?.stop();
    await database.drop();
  });

  it('60 wrong keys a second from one address: 429 with Retry-After past the limit, while a valid key from another address gets 200', async () => {
    const wrong: Promise<Answer>[] = [];
    const valid: Promise<Answer>[] = [];
    const started = performance.now();
    for (let i = 0; i < 90; i++) {
      await sleep(Math.max(0, started + (i * 1000) / 60 - performance.now()));
      wrong.push(call({ from: '127.0.0.2', authorization: bearer(wrongKey()) }));
      if (i % 5 === 0) valid.push(call({ from: '127.0.0.3', authorization: bearer(TOKEN) }));
    }
    const answers = await Promise.all(wrong);
    const refused = answers.filter((a) => a.status === 401).length;
    // Requests already past the check when the tenth failure landed are looked up and refused with 401.
    assert.ok(refused >= 10 && refused <= 25, `${refused} answered 401`);
    assert.equal(answers.filter((a) => a.status === 429).length, answers.length - refused);
    for (const answer of answers.slice(-50)) assertLimited(answer);
    assert.deepEqual((await Promise.all(valid)).map((a) => a.status), Array(18).fill(200));

    // Decided: a blocked address is answered before its key is looked at, a valid key included; else a
    // guesser there would still learn which guess is right. It waits Retry-After like any other.
    const retryAfter = assertLimited(await call({ from: '127.0.0.2', authorization: bearer(TOKEN) }));
    await sleep(retryAfter * 1000);
    assert.equal((await call({ from: '127.0.0.2', authorization: bearer(TOKEN) })).status, 200);
    assert.equal((await call({ from: '127.0.0.2' })).status, 401, 'no credential is not a failure: never refused with 429');
    assert.match(plinth.output(), /"address":"127\.0\.0\.2".*blocked an address after failed authentications/);
  });

  it('a key prefix over its limit still lets its valid key in from anywhere; one more failure with it blocks that address', async () => {
    const prefix = TOKEN.slice(0, 10);
    for (let i = 0; i < 5; i++) assert.equal((await call({ from: `127.0.0.1${i}`, authorization: bearer(wrongKey(prefix)) })).status, 401);
    assert.equal((await call({ from: '127.0.0.15', authorization: bearer(TOKEN) })).status, 200);
    assert.equal((await call({ from: '127.0.0.16', authorization: bearer(wrongKey(prefix)) })).status, 401);
    assertLimited(await call({ from: '127.0.0.16', authorization: bearer(TOKEN) }));
    for (let i = 0; i < 2; i++) assert.equal((await call({ from: '127.0.0.17', authorization: bearer(wrongKey()) })).status, 401, 'another prefix is not affected');
  });

  it('the state backend is limited the same way, HTTP Basic and run credentials counted, run credentials never refused unread', async () => {
    for (let i = 0; i < 10; i++) {
      const token = i % 2 ? wrongKey() : `plr_${randomBytes(24).toString('base64url')}`;
      assert.equal((await call({ from: '127.0.0.20', path: '/state-backend/stack-none', authorization: basic(token) })).status, 401);
    }
    assertLimited(await call({ from: '127.0.0.20', path: '/state-backend/stack-none', authorization: basic(wrongKey()) }));
    assertLimited(await call({ from: '127.0.0.20', path: '/stacks', authorization: bearer(TOKEN) }));
    // A run credential is still looked up: the worker host's address is every tenant's steps' address.
    assert.equal((await call({ from: '127.0.0.20', path: '/state-backend/stack-none', authorization: basic(`plr_${randomBytes(32).toString('base64url')}`) })).status, 401);
    assert.notEqual((await call({ from: '127.0.0.21', path: '/state-backend/stack-none', authorization: basic(TOKEN) })).status, 429);
  });

  it('behind a trusted proxy the client is the one X-Forwarded-For names; from anyone else the header is ignored', async () => {
    const viaProxy = (client: string, authorization: string) => call({ from: '127.0.0.5', authorization, headers: { 'x-forwarded-for': client } });
    for (let i = 0; i < 10; i++) assert.equal((await viaProxy('203.0.113.7', bearer(wrongKey()))).status, 401);
    assertLimited(await viaProxy('203.0.113.7', bearer(TOKEN)));
    assert.equal((await viaProxy('203.0.113.8', bearer(TOKEN))).status, 200, 'another client behind the same proxy');
    assert.equal((await call({ from: '127.0.0.6', authorization: bearer(TOKEN), headers: { 'x-forwarded-for': '203.0.113.7' } })).status, 200);
  });

  it('memory is capped: past PLINTH_AUTH_LIMIT_ENTRIES addresses, the stalest one is forgotten', async () => {
    for (let i = 0; i < 10; i++) await call({ from: '127.0.0.30', authorization: bearer(wrongKey()) });
    assertLimited(await call({ from: '127.0.0.30', authorization: bearer(wrongKey()) }));
    for (let i = 1; i <= 45; i++) assert.equal((await call({ from: `127.0.1.${i}`, authorization: bearer(wrongKey()) })).status, 401);
    assert.equal((await call({ from: '127.0.0.30', authorization: bearer(wrongKey()) })).status, 401, 'its entry was evicted: 40 newer ones are kept');
  });
});
