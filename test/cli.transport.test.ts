import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { createHttpFetch, httpFetch } from '../src/cli/http-fetch.ts';
import { cliUser } from './helpers/cli.ts';
import { freePort, ROOT } from './helpers/plinth-process.ts';

const TLS_DIR = path.join(ROOT, 'test', 'fixtures', 'tls');
const PRINCIPAL = { identityId: '0'.repeat(32), email: 'tls@example.test', globalRole: 'USER' };

/** Listens on loopback, holding idle keep-alive connections open for a minute, as a proxy might. */
async function listen<S extends http.Server | https.Server>(server: S): Promise<{ server: S; url: string }> {
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const scheme = server instanceof https.Server ? 'https' : 'http';
  return { server, url: `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe("the CLI's HTTP transport", () => {
  let url: string;
  let server: http.Server;
  /** Ends the held streaming answer: the test of a body that streams waits on it. */
  let releaseStream: () => void = () => {};
  before(async () => {
    ({ server, url } = await listen(
      http.createServer(async (req, res) => {
        let body = '';
        for await (const chunk of req) body += chunk;
        if (req.url === '/echo') {
          res.setHeader('set-cookie', ['a=1', 'b=2']);
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ method: req.method, headers: req.headers, body }));
        } else if (req.url === '/empty') {
          res.writeHead(204).end();
        } else if (req.url === '/moved') {
          res.writeHead(302, { location: 'http://elsewhere.invalid/' }).end('moved');
        } else if (req.url === '/stream') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: first\n\n');
          releaseStream = () => res.end('data: last\n\n');
        } else if (req.url === '/odd') {
          res.writeHead(999, { 'content-type': 'text/plain' }).end('no such status');
        } else if (req.url === '/cut') {
          res.writeHead(200, { 'content-length': '100' });
          res.write('only part of it');
          setTimeout(() => res.socket?.destroy(), 50);
        } else if (req.url === '/switch') {
          req.socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: other\r\n\r\n');
        } else if (req.url === '/stall') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('first words, then nothing');
        } else if (req.url === '/silent') {
          // Never answers: only an abort ends the request.
        } else res.writeHead(404).end();
      }),
    ));
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('sends the method, headers and body and answers with the status, headers and body', async () => {
    const response = await httpFetch(new Request(`${url}/echo`, { method: 'POST', headers: { 'x-organization-id': 'org-1' }, body: '{"a":1}' }));
    assert.equal(response.status, 201);
    assert.equal(response.ok, true);
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.deepEqual(response.headers.getSetCookie(), ['a=1', 'b=2']);
    const echoed = await response.json();
    assert.equal(echoed.method, 'POST');
    assert.equal(echoed.headers['x-organization-id'], 'org-1');
    assert.equal(echoed.headers['content-length'], '7');
    assert.equal(echoed.body, '{"a":1}');
  });

  it('gives a 204 no body, and answers a redirect with the 3xx itself, never following it', async () => {
    const empty = await httpFetch(`${url}/empty`);
    assert.equal(empty.status, 204);
    assert.equal(empty.body, null);
    const moved = await httpFetch(`${url}/moved`);
    assert.equal(moved.status, 302);
    assert.equal(moved.headers.get('location'), 'http://elsewhere.invalid/');
    assert.equal(await moved.text(), 'moved');
  });

  it('streams a body as it arrives, before the answer ends', async () => {
    const response = await httpFetch(`${url}/stream`);
    const reader = response.body!.getReader();
    const first = await reader.read();
    assert.equal(Buffer.from(first.value!).toString(), 'data: first\n\n');
    releaseStream();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += Buffer.from(chunk.value).toString();
    assert.equal(rest, 'data: last\n\n');
  });

  it('fails a refused connection as fetch does: a TypeError "fetch failed" with the socket error as its cause', async () => {
    const port = await freePort();
    const error = await httpFetch(`http://127.0.0.1:${port}/`).then(
      () => assert.fail('a closed port answered'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof TypeError);
    assert.equal(error.message, 'fetch failed');
    assert.equal((error.cause as NodeJS.ErrnoException).code, 'ECONNREFUSED');
  });

  it('fails an answer fetch could not give (a status outside 200-599) as a failed fetch, not a crash', async () => {
    const error = await httpFetch(`${url}/odd`).then(
      () => assert.fail('status 999 made an answer'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof TypeError);
    assert.equal(error.message, 'fetch failed');
    assert.ok(error.cause instanceof RangeError, String(error.cause));
  });

  it('fails a body cut short as fetch does: its reader gets a TypeError "terminated" with the cause', async () => {
    const response = await httpFetch(`${url}/cut`);
    const error = await response.text().then(
      () => assert.fail('a cut body read whole'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof TypeError, String(error));
    assert.equal(error.message, 'terminated');
    assert.ok(error.cause instanceof Error);
  });

  it('fails a 101 to a request that asked for no upgrade at once', async () => {
    const error = await httpFetch(`${url}/switch`).catch((e: unknown) => e);
    assert.ok(error instanceof TypeError, String(error));
    assert.equal(error.message, 'fetch failed');
    assert.match(String((error.cause as Error).message), /switched protocols/);
  });

  it('gives up on a server that goes quiet, before its answer or within its body', async () => {
    const impatient = createHttpFetch({ idleTimeoutMs: 300 });
    const waited = await impatient(`${url}/silent`).catch((e: unknown) => e);
    assert.ok(waited instanceof TypeError, String(waited));
    assert.equal(waited.message, 'fetch failed');
    assert.match((waited.cause as Error).message, /sent nothing for 0.3 s/);
    const stalled = await impatient(`${url}/stall`);
    const error = await stalled.text().catch((e: unknown) => e);
    assert.ok(error instanceof TypeError, String(error));
    assert.equal(error.message, 'terminated');
    assert.match((error.cause as Error).message, /sent nothing for 0.3 s/);
  });

  it('leaves no connection that keeps a program alive once it is done', async () => {
    // The server holds idle connections for a minute; a program that used the fetch ends as soon as its work does.
    const script = `import { httpFetch } from './src/cli/http-fetch.ts';
      const first = await httpFetch(process.argv[1] + '/echo');
      await first.text();
      const second = await httpFetch(process.argv[1] + '/echo', { method: 'POST', body: 'x' });
      console.log(second.status);`;
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, url], { cwd: ROOT });
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    assert.equal(stdout.trim(), '201');
    assert.ok(Date.now() - started < 20_000, `the program took ${Date.now() - started} ms`);
  });

  it("rejects with the signal's reason when aborted waiting for an answer or reading a body", async () => {
    const timedOut = await httpFetch(new Request(`${url}/silent`, { signal: AbortSignal.timeout(100) })).catch((e: unknown) => e);
    assert.equal((timedOut as Error).name, 'TimeoutError');
    const controller = new AbortController();
    const response = await httpFetch(new Request(`${url}/stream`, { signal: controller.signal }));
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort(new Error('the user pressed Ctrl-C'));
    await assert.rejects(reader.read(), /the user pressed Ctrl-C/);
  });
});

describe('the CLI over HTTPS', () => {
  let url: string;
  let server: https.Server;
  before(async () => {
    const tls = { key: readFileSync(path.join(TLS_DIR, 'loopback.key')), cert: readFileSync(path.join(TLS_DIR, 'loopback.crt')) };
    ({ server, url } = await listen(
      https.createServer(tls, (req, res) => {
        if (req.url === '/auth/whoami' && req.headers.authorization === 'Bearer plk_tls') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: PRINCIPAL }));
        } else res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'Auth:Token:INVALID', message: 'no' }));
      }),
    ));
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('trusts the certificates of NODE_EXTRA_CA_CERTS', async () => {
    const user = cliUser({ PLINTH_TOKEN: 'plk_tls', NODE_EXTRA_CA_CERTS: path.join(TLS_DIR, 'loopback.crt') });
    const principal = await user.json(['whoami', '--host', url]);
    assert.equal(principal.email, PRINCIPAL.email);
  });

  it('refuses a certificate nothing trusts, and says why', async () => {
    const result = await cliUser({ PLINTH_TOKEN: 'plk_tls' }).run(['whoami', '--host', url]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, new RegExp(`cannot reach ${url.replace(/[.:/]/g, '\\$&')}: self-signed certificate`));
  });
});
