import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import type { LogSink } from '../log-sink.ts';
import { captureOutput } from './output-capture.ts';
import { OutputMask } from './output-mask.ts';

/** A sink that keeps the records it is given, per stream, as a reader rebuilds them. */
function memorySink() {
  const text = { stdout: '', stderr: '' };
  const sink = {
    stats: { truncated: false },
    queuedBytes: 0,
    writeOutput(stream: 'stdout' | 'stderr', bytes: Buffer, partial: boolean) {
      text[stream] += bytes.toString('utf8') + (partial ? '' : '\n');
      return true;
    },
    discard() {},
    belowQueued: async () => {},
  };
  return { sink: sink as unknown as LogSink, text };
}

describe('captureOutput with a mask', () => {
  it("masks each stream on its own, a value cut by a long line's record boundary and an unended last line included", async () => {
    const { sink, text } = memorySink();
    const mask = new OutputMask(['SECRET-VALUE']);
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    captureOutput(stdout, 'stdout', sink, mask);
    captureOutput(stderr, 'stderr', sink, mask);
    const long = 'x'.repeat(16_380);
    stdout.write(`${long}SECRET-`);
    stderr.write('warning: SECRET-');
    stdout.write('VALUE done\n');
    stderr.end('VALUE');
    stdout.end('last SECRET-VALUE');
    await Promise.all([once(stdout, 'end'), once(stderr, 'end')]);
    assert.equal(text.stdout, `${long}*** done\nlast ***`);
    assert.equal(text.stderr, 'warning: ***');
  });
});
