import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cutPoint, escapeBytes, LineSplitter, storedForm } from './log-bytes.ts';

const b = (s: string) => Buffer.from(s, 'utf8');
const split = (chunks: Buffer[], max?: number) => {
  const splitter = new LineSplitter(max);
  const records = chunks.flatMap((c) => splitter.push(c)).concat(splitter.end());
  return records.map((r) => [r.bytes.toString('latin1'), r.partial]);
};

describe('LineSplitter', () => {
  it('cuts at newlines across chunk boundaries and keeps a final line without newline as partial', () => {
    assert.deepEqual(split([b('one\ntw'), b('o\n\nthr'), b('ee')]), [
      ['one', false],
      ['two', false],
      ['', false],
      ['three', true],
    ]);
  });

  it('keeps carriage returns and every byte, newline excepted', () => {
    assert.deepEqual(split([Buffer.from([0x61, 0x0d, 0x0a, 0x00, 0xff, 0x0a])]), [
      ['a\r', false],
      ['\x00\xff', false],
    ]);
  });

  it('splits a line longer than a record into several records, none lost, the last one ending the line', () => {
    assert.deepEqual(split([b('abcdefghij'), b('k\n')], 4), [
      ['abcd', true],
      ['efgh', true],
      ['ijk', false],
    ]);
    // A line of exactly the record size followed by its newline is one record.
    assert.deepEqual(split([b('abcd'), b('\n')], 4), [['abcd', false]]);
  });

  it('never splits a valid multi-byte character across two records', () => {
    const splitter = new LineSplitter(4);
    const records = splitter.push(b('abcé€z\n'));
    assert.deepEqual(
      records.map((r) => r.bytes.toString('utf8')),
      ['abc', 'é', '€z'],
    );
    assert.ok(
      records.every((r) => storedForm(r.bytes).bytes === null),
      'every record is plain text',
    );
  });

  it('holds no more than a record between chunks', () => {
    const splitter = new LineSplitter(8);
    const records = splitter.push(Buffer.alloc(100, 0x61));
    assert.equal(records.length, 12);
    assert.equal(splitter.end()[0].bytes.length, 4);
  });
});

describe('cutPoint', () => {
  it('moves back to the start of a character only when the cut falls inside one', () => {
    const buf = b('a€b'); // 61 e2 82 ac 62
    assert.equal(cutPoint(buf, 0, 1), 1);
    assert.equal(cutPoint(buf, 0, 2), 1);
    assert.equal(cutPoint(buf, 0, 3), 1);
    assert.equal(cutPoint(buf, 0, 4), 4);
    // Stray continuation bytes are cut where the limit says: they are invalid anyway.
    assert.equal(cutPoint(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80]), 0, 4), 4);
  });
});

describe('storedForm and escapeBytes', () => {
  it('keeps valid UTF-8 as it is, with no bytes beside it', () => {
    assert.deepEqual(storedForm(b('héllo \\x00 wörld ✓')), { line: 'héllo \\x00 wörld ✓', bytes: null });
  });

  it('escapes NUL and invalid bytes visibly, backslashes doubled, and keeps the exact bytes', () => {
    const raw = Buffer.concat([b('a'), Buffer.from([0x00]), b('b\\x'), Buffer.from([0xff, 0xc3]), b('é')]);
    const form = storedForm(raw);
    assert.equal(form.line, 'a\\x00b\\\\x\\xff\\xc3é');
    assert.deepEqual(form.bytes, raw);
  });

  it('escapes overlong encodings and surrogates byte by byte', () => {
    assert.equal(escapeBytes(Buffer.from([0xc0, 0xaf])), '\\xc0\\xaf');
    assert.equal(escapeBytes(Buffer.from([0xed, 0xa0, 0x80])), '\\xed\\xa0\\x80');
    assert.equal(escapeBytes(Buffer.from([0xf0, 0x9f, 0x98, 0x80])), '😀');
  });
});
