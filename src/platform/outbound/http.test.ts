import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EgressDeniedError, parseAllowList } from './address-policy.ts';
import { OutboundLimitError, outboundRequest } from './http.ts';
import type { Lookup } from './resolve.ts';

/** Two servers on loopback, one allowed by the policy (127.0.0.2) and one not (127.0.0.1): which one a request reaches shows where it connected. */
describe('outbound requests', () => {
  const hits = { allowed: 0, refused: 0 };
  let allowed: http.Server;
  let refused: http.Server;
  let port: number;
  const policy = (lookup: Lookup) => ({ allow: parseAllowList(['127.0.0.2/32'], 'test'), lookup });

  before(async () => {
    allowed = http.createServer((req, res) => {
      hits.allowed++;
      if (req.url === '/redirect') return res.writeHead(302, { location: `http://127.0.0.1:${port}/` }).end();
      if (req.url === '/big') return res.end('x'.repeat(100_000));
      if (req.url === '/slow') return setTimeout(() => res.end('late'), 2_000);
      res.end(`host ${req.headers.host}`);
    });
    allowed.listen(0, '127.0.0.2');
    await once(allowed, 'listening');
    port = (allowed.address() as AddressInfo).port;
    refused = http.createServer((_req, res) => {
      hits.refused++;
      res.end('internal');
    });
    refused.listen(port, '127.0.0.1');
    await once(refused, 'listening');
  });
  after(() => {
    allowed.close();
    refused.close();
  });

  it('connects to the address it checked, keeping the name for the Host header, however the name answers a second time (DNS rebinding)', async () => {
    let calls = 0;
    const rebinding: Lookup = async () => [{ address: calls++ === 0 ? '127.0.0.2' : '127.0.0.1', family: 4 }];
    const res = await outboundRequest(`http://rebind.example:${port}/`, { timeoutMs: 5_000, maxBytes: 1024 }, policy(rebinding));
    assert.equal(res.body.toString(), `host rebind.example:${port}`);
    assert.equal(calls, 1);
    assert.equal(hits.refused, 0);
  });

  it('refuses a refused address before connecting, by name or by literal', async () => {
    const toLoopback: Lookup = async () => [{ address: '127.0.0.1', family: 4 }];
    await assert.rejects(outboundRequest(`http://internal.example:${port}/`, { timeoutMs: 5_000, maxBytes: 1024 }, policy(toLoopback)), EgressDeniedError);
    await assert.rejects(outboundRequest(`http://[::ffff:127.0.0.1]:${port}/`, { timeoutMs: 5_000, maxBytes: 1024 }, policy(toLoopback)), EgressDeniedError);
    assert.equal(hits.refused, 0);
  });

  it("follows no redirect, bounds the answer's size and its time, and fetches only http(s)", async () => {
    const lookup: Lookup = async () => [{ address: '127.0.0.2', family: 4 }];
    const redirected = await outboundRequest(`http://a.example:${port}/redirect`, { timeoutMs: 5_000, maxBytes: 1024 }, policy(lookup));
    assert.equal(redirected.status, 302);
    assert.equal(hits.refused, 0, 'the redirect to a refused address was not followed');
    await assert.rejects(outboundRequest(`http://a.example:${port}/big`, { timeoutMs: 5_000, maxBytes: 1024 }, policy(lookup)), OutboundLimitError);
    const started = Date.now();
    await assert.rejects(
      outboundRequest(`http://a.example:${port}/slow`, { timeoutMs: 300, maxBytes: 1024 }, policy(lookup)),
      /no complete answer within 300 ms/,
    );
    assert.ok(Date.now() - started < 1_500);
    await assert.rejects(outboundRequest('file:///etc/passwd', { timeoutMs: 300, maxBytes: 1024 }, policy(lookup)), /only http and https/);
  });
});
