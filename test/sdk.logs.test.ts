import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { followLogs, type ReconnectEvent } from '@plinth/sdk';

const line = (seq: number, text: string) =>
  `event: line\nid: ${seq}\ndata: ${JSON.stringify({ seq, stream: 'stdout', line: text, createdAt: '2026-01-01T00:00:00.000Z' })}\n\n`;

describe('@plinth/sdk followLogs', () => {
  it('opens a stream whose time is up again at once, after the last seq it received, without reporting an outage', async () => {
    const bodies = [`${line(1, 'a')}event: reconnect\ndata: {"reason":"time limit"}\n\n`, `${line(2, 'b')}event: end\ndata: {"status":"SUCCEEDED"}\n\n`];
    const asked: (string | null)[] = [];
    const send = async (_path: string, init?: RequestInit) => {
      asked.push(new Headers(init?.headers).get('last-event-id'));
      return new Response(bodies.shift(), { headers: { 'content-type': 'text/event-stream' } });
    };
    const outages: ReconnectEvent[] = [];
    const follow = followLogs(send, 'execution', { onReconnect: (e) => outages.push(e) });
    const lines: string[] = [];
    let next = await follow.next();
    for (; !next.done; next = await follow.next()) lines.push(next.value.line);
    assert.deepEqual(lines, ['a', 'b']);
    assert.equal(next.value, 'SUCCEEDED');
    assert.deepEqual(asked, ['0', '1']);
    assert.deepEqual(outages, []);
  });

  it('backs off from a stream that asks to reconnect at once, having brought nothing, as from a failure', async () => {
    const bodies = ['event: reconnect\ndata: {}\n\n', `${line(1, 'a')}event: end\ndata: {"status":"FAILED"}\n\n`];
    const send = async () => new Response(bodies.shift(), { headers: { 'content-type': 'text/event-stream' } });
    const outages: ReconnectEvent[] = [];
    const follow = followLogs(send, 'execution', { onReconnect: (e) => outages.push(e) });
    const lines: string[] = [];
    let next = await follow.next();
    for (; !next.done; next = await follow.next()) lines.push(next.value.line);
    assert.deepEqual(lines, ['a']);
    assert.equal(next.value, 'FAILED');
    assert.equal(outages.length, 1);
    assert.ok(outages[0]!.delayMs > 0);
  });
});
