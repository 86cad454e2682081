import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createPlinth, parseSse, PlinthApiError, retryAfterMs, unwrap, type SseEvent } from '@plinth/sdk';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function events(chunks: string[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const event of parseSse(streamOf(chunks))) out.push(event);
  return out;
}

describe('the SDK SSE parser', () => {
  const text =
    ': keep-alive\r\n\r\nevent: line\r\nid: 1\r\ndata: {"a":1}\r\n\r\nevent: line\nid: 2\ndata: first\ndata: second\n\nretry: 10\ndata:no-space\n\nevent: end\ndata: {"status":"SUCCEEDED"}\n\nevent: line\ndata: unfinished';
  const expected: SseEvent[] = [
    { event: 'line', id: '1', data: '{"a":1}' },
    { event: 'line', id: '2', data: 'first\nsecond' },
    { event: 'message', id: '2', data: 'no-space' },
    { event: 'end', id: '2', data: '{"status":"SUCCEEDED"}' },
  ];

  it('reads events, multi-line data, ids, comments and CRLF; an event cut off by the end of the stream is dropped', async () => {
    assert.deepEqual(await events([text]), expected);
  });

  it('gives the same events however the bytes are split into chunks', async () => {
    for (let at = 1; at < text.length; at++) assert.deepEqual(await events([text.slice(0, at), text.slice(at)]), expected, `split at ${at}`);
    assert.deepEqual(await events([...text]), expected);
  });
});

describe('SDK retries of 429 and 5xx against a stand-in server', () => {
  let server: http.Server;
  let baseUrl: string;
  const plan: Record<string, number[]> = {};
  const hits: Record<string, number> = {};
  before(async () => {
    server = http.createServer((req, res) => {
      const key = `${req.method} ${req.url}`;
      hits[key] = (hits[key] ?? 0) + 1;
      const status = plan[key]?.shift() ?? 200;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (status === 429) headers['retry-after'] = '1';
      res.writeHead(status, headers);
      res.end(status === 200 ? JSON.stringify({ data: { ok: true } }) : JSON.stringify({ code: 'Test:Stub:FAILED', message: `status ${status}` }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('waits what Retry-After asks on a 429, then succeeds', async () => {
    plan['GET /auth/whoami'] = [429];
    const started = Date.now();
    const res = await createPlinth({ baseUrl }).fetch('/auth/whoami');
    assert.equal(res.status, 200);
    assert.equal(hits['GET /auth/whoami'], 2);
    assert.ok(Date.now() - started >= 950, `waited ${Date.now() - started} ms`);
  });

  it('repeats a GET on a 502, never a POST on a 500, and gives up after its attempts', async () => {
    plan['GET /projects'] = [502, 502];
    assert.equal((await createPlinth({ baseUrl, retry: { baseDelayMs: 10 } }).fetch('/projects')).status, 200);
    assert.equal(hits['GET /projects'], 3);
    plan['POST /projects'] = [500];
    assert.equal((await createPlinth({ baseUrl, retry: { baseDelayMs: 10 } }).fetch('/projects', { method: 'POST', body: '{}' })).status, 500);
    assert.equal(hits['POST /projects'], 1);
    plan['GET /stacks'] = [503, 503, 503];
    assert.equal((await createPlinth({ baseUrl, retry: { attempts: 2, baseDelayMs: 10 } }).fetch('/stacks')).status, 503);
    assert.equal(hits['GET /stacks'], 2);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    assert.equal(retryAfterMs('3'), 3000);
    assert.equal(retryAfterMs(new Date(Date.UTC(2030, 0, 1, 0, 0, 10)).toUTCString(), Date.UTC(2030, 0, 1)), 10_000);
    assert.equal(retryAfterMs('soon'), undefined);
  });
});

describe('SDK and redirects', () => {
  /** A server on a port of its own that records what it was sent. */
  const serve = async (answer: (req: http.IncomingMessage, res: http.ServerResponse) => void) => {
    const seen: { url: string; authorization?: string }[] = [];
    const server = http.createServer((req, res) => {
      seen.push({ url: `${req.method} ${req.url}`, authorization: req.headers.authorization });
      req.resume().on('end', () => answer(req, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, seen, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
  };
  let elsewhere: Awaited<ReturnType<typeof serve>>;
  let redirecting: Awaited<ReturnType<typeof serve>>;
  before(async () => {
    elsewhere = await serve((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{}}'));
    redirecting = await serve((req, res) => res.writeHead(req.method === 'POST' ? 307 : 302, { location: `${elsewhere.url}${req.url}` }).end());
  });
  after(async () => {
    for (const { server } of [elsewhere, redirecting]) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('never follows one: the key is not sent to where it points, and the caller gets an error naming it', async () => {
    const plinth = createPlinth({ baseUrl: redirecting.url, token: 'plk_never_elsewhere' });
    const refused = (error: unknown) => {
      assert.ok(error instanceof PlinthApiError, String(error));
      assert.equal(error.code, 'Sdk:Response:REDIRECT');
      assert.match(error.message, new RegExp(`redirected to ${elsewhere.url}/auth/whoami|redirected to ${elsewhere.url}/projects`));
      return true;
    };
    await assert.rejects(plinth.fetch('/auth/whoami'), refused);
    await assert.rejects(unwrap(plinth.api.GET('/auth/whoami')), refused);
    await assert.rejects(
      plinth.fetch('/projects', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }),
      (error: unknown) => refused(error) && (error as PlinthApiError).status === 307,
    );
    assert.deepEqual(elsewhere.seen, []);
    assert.deepEqual(
      redirecting.seen.map((r) => r.url),
      ['GET /auth/whoami', 'GET /auth/whoami', 'POST /projects'],
      'sent once each: a redirect is not retried',
    );
    assert.ok(redirecting.seen.every((r) => r.authorization === 'Bearer plk_never_elsewhere'));
  });
});
