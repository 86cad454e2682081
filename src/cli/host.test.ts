import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normaliseHost, warnIfCleartext } from './host.ts';

describe('the plain-http warning', () => {
  // One module instance stands for one invocation: it warns at most once, so the silent cases go first.
  it('is written once per invocation for plain http to another machine; https and loopback never', async () => {
    const lines: string[] = [];
    const warn = (line: string) => lines.push(line);
    for (const host of ['https://plinth.example', 'https://192.0.2.1', 'http://127.0.0.1:8080', '127.0.0.2:8080', 'http://localhost:8080', 'http://[::1]:8080'])
      await warnIfCleartext(host, warn);
    assert.deepEqual(lines, []);
    await warnIfCleartext('http://192.0.2.1:9/api', warn);
    await warnIfCleartext('http://192.0.2.1:9', warn);
    await warnIfCleartext('http://plinth.example', warn);
    assert.deepEqual(lines, ['plinth: warning: http://192.0.2.1:9 is plain http: the API key and every request cross the network unencrypted; use https://']);
  });
});

describe('the host', () => {
  it('is refused with a user name or password in it, and the message does not repeat them', () => {
    for (const host of ['http://admin:hunter2@127.0.0.1:8080', 'https://hunter2@plinth.example', 'admin:hunter2@plinth.example']) {
      assert.throws(
        () => normaliseHost(host),
        (error: Error) => error.message.includes('must not hold a user name or password') && !error.message.includes('hunter2'),
      );
    }
    assert.equal(normaliseHost('plinth.example:8443/'), 'http://plinth.example:8443');
  });
});
