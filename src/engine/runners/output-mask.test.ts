import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, it } from 'node:test';
import { LineSplitter, type OutputRecord } from '../log-bytes.ts';
import { OutputMask, type StreamMasker } from './output-mask.ts';

const b = (s: string) => Buffer.from(s, 'utf8');

/** The records one stream stores: split as captureOutput splits them, `maxBytes` per record, then masked. */
function capture(needles: string[], chunks: string[], maxBytes = 16_384): OutputRecord[] {
  const splitter = new LineSplitter(maxBytes);
  const masker = new OutputMask(needles).forStream(maxBytes);
  const records = chunks.flatMap((c) => splitter.push(b(c))).concat(splitter.end());
  return records.flatMap((r) => masker.push(r)).concat(masker.end());
}

/** The stream's text as a reader rebuilds it: each record followed by a newline unless partial. */
const rebuilt = (records: OutputRecord[]) => records.map((r) => r.bytes.toString('utf8') + (r.partial ? '' : '\n')).join('');

/** The reference: the whole line masked at once, leftmost then longest needle first. */
function maskedWhole(needles: string[], text: string): string {
  const sorted = [...needles].sort((x, y) => y.length - x.length);
  let out = '';
  for (let i = 0; i < text.length; ) {
    const needle = sorted.find((n) => text.startsWith(n, i));
    out += needle ? '***' : text[i];
    i += needle ? needle.length : 1;
  }
  return out;
}

describe('OutputMask', () => {
  it('masks every occurrence, the longest needle winning where one is a prefix of another', () => {
    const records = capture(['hunter2', 'hunter22'], ['pw=hunter22 again hunter2 and hunter2\n']);
    assert.deepEqual(
      records.map((r) => [r.bytes.toString(), r.partial]),
      [['pw=*** again *** and ***', false]],
    );
  });

  it('masks a value cut by the boundary between two partial records of a long line', () => {
    const records = capture(['SECRET-TOKEN'], ['abcdeSECRE', 'T-TOKENxyz\n'], 8);
    assert.equal(rebuilt(records), 'abcde***xyz\n');
    assert.ok(records.every((r) => r.bytes.length <= 8));
    assert.deepEqual(
      records.map((r) => r.partial),
      [...records.slice(1).map(() => true), false],
    );
  });

  it('masks a value spread over three partial records', () => {
    const records = capture(['SECRET-TOKEN'], ['ab', 'SECRET-TOKEN', 'cd\n'], 4);
    assert.equal(rebuilt(records), 'ab***cd\n');
    assert.ok(records.length >= 2, 'the line still comes out in several records');
  });

  it('takes the longer needle when the shorter one, its prefix, ends right at a record boundary', () => {
    const records = capture(['abc', 'abcdef'], ['xxabc', 'defyy\n'], 5);
    assert.equal(rebuilt(records), 'xx***yy\n');
  });

  it('gives back the held tail when the output ends without a newline, masked', () => {
    assert.equal(rebuilt(capture(['SECRET'], ['tail SECR', 'ET'], 8)), 'tail ***');
    assert.equal(rebuilt(capture(['SECRET'], ['tail SEC'], 8)), 'tail SEC');
  });

  it('never holds back part of a multi-byte character: every record stays valid UTF-8', () => {
    // A 10-byte needle makes the masker hold 9 bytes: without care it would cut a 2-byte character in two.
    for (const [needles, line, masked] of [
      [['éééé!!'], 'é'.repeat(12), 'é'.repeat(12)],
      [['ééééé'], `a${'é'.repeat(11)}`, 'a******é'],
    ] as const) {
      const records = capture([...needles], [line, '\n'], 6);
      assert.ok(
        records.every((r) => isUtf8(r.bytes)),
        JSON.stringify(records.map((r) => [...r.bytes])),
      );
      assert.equal(rebuilt(records), `${masked}\n`);
    }
  });

  it('loses and repeats no byte: random records come out as the whole line masked at once', () => {
    let seed = 11;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = (alphabet: string, length: number) => Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    for (let round = 0; round < 300; round++) {
      const needles = Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick('abc', 1 + Math.floor(random() * 7)));
      const line = pick('abcd', Math.floor(random() * 80));
      const maxBytes = 3 + Math.floor(random() * 10);
      const chunks = line.match(/.{1,5}/g) ?? [];
      const ended = random() < 0.5;
      const records = capture(needles, ended ? [...chunks, '\n'] : chunks, maxBytes);
      assert.equal(rebuilt(records), maskedWhole(needles, line) + (ended ? '\n' : ''), `needles ${needles} line ${line} max ${maxBytes}`);
      assert.ok(records.every((r) => r.bytes.length <= maxBytes));
    }
  });

  it("keeps each stream its own held tail: a value is not made of one stream's end and another's start", () => {
    const mask = new OutputMask(['SECRET']);
    const [stdout, stderr]: StreamMasker[] = [mask.forStream(), mask.forStream()];
    const out = [...stdout.push({ bytes: b('a SEC'), partial: true }), ...stderr.push({ bytes: b('b SEC'), partial: true })];
    out.push(...stderr.push({ bytes: b('RET b'), partial: false }), ...stdout.push({ bytes: b('ret a'), partial: false }));
    assert.deepEqual(rebuilt(out).split('\n'), ['b *** b', 'a SECret a', '']);
  });

  it('passes records through untouched when there is nothing to mask', () => {
    const record = { bytes: b('plain'), partial: true };
    const masker = new OutputMask([]).forStream();
    assert.deepEqual(masker.push(record), [record]);
    assert.deepEqual(masker.end(), []);
  });
});
