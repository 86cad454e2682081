import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { tracingEnabled, withSpan } from '../src/platform/tracing.ts';
import { startTestApp } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

const TOKEN = 'plk_tracing_test_token_0123456789abcdefghijklmnop';

interface OtlpSpan {
  name: string;
  traceId: string;
  attributes: { key: string; value: { stringValue?: string } }[];
}

/** Every span of the OTLP/HTTP JSON export requests received so far. */
function spansOf(bodies: string[]): OtlpSpan[] {
  return bodies.flatMap((b) => JSON.parse(b).resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans)));
}
const attr = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

describe('tracing', () => {
  it('is off without OTEL_EXPORTER_OTLP_ENDPOINT: no OpenTelemetry hook on the app, spans are plain calls', async () => {
    assert.equal(tracingEnabled({}), false);
    assert.equal(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(await withSpan('x', {}, async () => 42), 42);
    const t = await startTestApp();
    try {
      assert.equal(t.app.hasRequestDecorator('opentelemetry'), false);
    } finally {
      await t.close();
    }
  });

  describe('with an OTLP endpoint (a receiver on loopback)', () => {
    let database: TestDatabase;
    let receiver: Server;
    let plinth: PlinthProcess;
    const bodies: string[] = [];

    before(async () => {
      database = await createTestDatabase();
      receiver = createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          if (req.url === '/v1/traces') bodies.push(body);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
      plinth = await startPlinthProcess(
        { DATABASE_URL: database.url, PLINTH_ADMIN_TOKEN: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', LOG_LEVEL: 'debug' },
        // Generous: a loaded machine starts a process slowly, and this one loads OpenTelemetry first.
        { command: 'api-server', readyTimeoutMs: 120_000 },
      );
    });
    after(async () => {
      await plinth?.stop();
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
      await database.drop();
    });

    it('exports a span per request with its pg queries under it, and puts the trace id in log lines', async () => {
      const res = await fetch(`${plinth.baseUrl}/auth/whoami`, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(res.status, 200);
      const requestId = res.headers.get('x-request-id')!;
      const deadline = Date.now() + 15_000;
      let request: OtlpSpan | undefined;
      while (Date.now() < deadline && !request) {
        request = spansOf(bodies).find((s) => attr(s, 'plinth.request_id') === requestId);
        if (!request) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(request, `no span names request ${requestId}: ${JSON.stringify(spansOf(bodies).map((s) => s.name))}`);
      const trace = spansOf(bodies).filter((s) => s.traceId === request.traceId);
      assert.ok(
        trace.some((s) => s.attributes.some((a) => a.key === 'db.system' || a.key === 'db.system.name')),
        `no pg span in ${JSON.stringify(trace.map((s) => s.name))}`,
      );
      assert.ok(trace.length >= 2);
      // Log lines are written in batches, at least once a second; a read that succeeded is logged at debug.
      const logDeadline = Date.now() + 5000;
      while (Date.now() < logDeadline && !plinth.output().includes(`"trace_id":"${request.traceId}"`)) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(plinth.output().includes(`"trace_id":"${request.traceId}"`), `no log line carries the trace id:\n${plinth.output()}`);
    });
  });
});
