import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseAdvertisement } from './remote-branches.ts';

const pkt = (line: string) => `${(Buffer.byteLength(line) + 4).toString(16).padStart(4, '0')}${line}`;

describe('a smart-HTTP ref advertisement', () => {
  const a = 'a'.repeat(40);
  const b = 'b'.repeat(40);

  it('gives the branches in name order, capabilities, tags and other refs left out', async () => {
    const body = `${pkt('# service=git-upload-pack\n')}0000${pkt('version 1\n')}${pkt(`${b} HEAD\0multi_ack symref=HEAD:refs/heads/main\n`)}${pkt(`${b} refs/heads/main\n`)}${pkt(`${a} refs/heads/dev\n`)}${pkt(`${a} refs/tags/v1\n`)}${pkt(`${a} refs/pull/1/head\n`)}0000`;
    assert.deepEqual(await parseAdvertisement(Buffer.from(body)), [
      { name: 'dev', commitSha: a },
      { name: 'main', commitSha: b },
    ]);
  });

  it("reads the first ref's capabilities off its line, and an empty repository as no branch", async () => {
    const first = `${pkt('# service=git-upload-pack\n')}0000${pkt(`${a} refs/heads/main\0report-status agent=git/2\n`)}0000`;
    assert.deepEqual(await parseAdvertisement(Buffer.from(first)), [{ name: 'main', commitSha: a }]);
    const empty = `${pkt('# service=git-upload-pack\n')}0000${pkt(`${'0'.repeat(40)} capabilities^{}\0report-status\n`)}0000`;
    assert.deepEqual(await parseAdvertisement(Buffer.from(empty)), []);
  });

  it('is no advertisement when the body is anything else: a login page, a dumb server, a cut or lying packet', async () => {
    for (const body of [
      '<html>sign in</html>',
      `${a}\trefs/heads/main\n`,
      `${pkt('# service=git-upload-pack\n')}`,
      `${pkt('# service=git-upload-pack\n')}0000ffff${a}`,
      `0003`,
      `zzzz`,
      '',
    ]) {
      assert.equal(await parseAdvertisement(Buffer.from(body)), undefined, JSON.stringify(body));
    }
  });

  it('reads a hostile 16 MiB answer, of tiny packets or of branches, without holding the event loop', async () => {
    const fill = (packet: (i: number) => string) => {
      const parts = [`${pkt('# service=git-upload-pack\n')}0000`];
      for (let i = 0, size = 0; size < 16 * 1024 * 1024 - 200; i++) size += parts[parts.push(packet(i)) - 1]!.length;
      return Buffer.from(`${parts.join('')}0000`);
    };
    const tiny = fill(() => '0005x');
    // Out of name order, as Git never sends them: the parse sorts them.
    const many = fill((i) => pkt(`${a} refs/heads/${((i * 7919) % 300_007).toString(36)}-${i}\n`));
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    assert.deepEqual(await parseAdvertisement(tiny), []);
    const branches = await parseAdvertisement(many);
    delay.disable();
    assert.ok(branches && branches.length > 200_000);
    assert.ok(
      branches.every((b, i) => i === 0 || branches[i - 1]!.name < b.name),
      'in name order',
    );
    // Parsed in one go, the tiny packets alone held the process for seconds.
    assert.ok(delay.max / 1e6 < 250, `the event loop was held for ${(delay.max / 1e6).toFixed(0)} ms`);
  });
});
