import { isUtf8 } from 'node:buffer';

/**
 * Pure byte handling of step output (docs/engine.md#logs): cutting a byte stream into records, and the
 * API's string form of a record. Nothing here touches the process or the database.
 */

/** The most bytes one stored record holds: a longer line is split into several records, never cut. */
export const MAX_RECORD_BYTES = 16_384;

export interface OutputRecord {
  bytes: Buffer;
  /** Not ended by a newline: the line goes on in the next record, or the output ended without one. */
  partial: boolean;
}

/**
 * Where to cut `buf` at or before `end` so that a valid multi-byte UTF-8 character is not split across
 * two records (which would make both look like invalid bytes). Only ever moves back by up to 3 bytes.
 */
export function cutPoint(buf: Buffer, start: number, end: number): number {
  if (end >= buf.length) return end;
  let p = end;
  while (p > start && end - p < 3 && (buf[p] & 0xc0) === 0x80) p--;
  if (p === end) return end;
  const lead = buf[p];
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return p > start && p + length > end ? p : end;
}

/**
 * LineSplitter cuts a stream of chunks into records at newlines (the newline itself is not part of a
 * record), and every `maxBytes` bytes of a longer line. It holds at most `maxBytes` bytes between
 * chunks, so memory stays bounded whatever the process prints.
 */
export class LineSplitter {
  private carry: Buffer | undefined;

  constructor(private readonly maxBytes = MAX_RECORD_BYTES) {}

  push(chunk: Buffer): OutputRecord[] {
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = undefined;
    const records: OutputRecord[] = [];
    let start = 0;
    for (;;) {
      const newline = buf.indexOf(10, start);
      if (newline !== -1 && newline - start <= this.maxBytes) {
        records.push({ bytes: buf.subarray(start, newline), partial: false });
        start = newline + 1;
      } else if (buf.length - start > this.maxBytes) {
        const cut = cutPoint(buf, start, start + this.maxBytes);
        records.push({ bytes: buf.subarray(start, cut), partial: true });
        start = cut;
      } else break;
    }
    // A copy, so the carried tail does not keep the whole chunk alive.
    if (start < buf.length) this.carry = Buffer.from(buf.subarray(start));
    return records;
  }

  /** The bytes after the last newline, once the stream has ended. */
  end(): OutputRecord[] {
    const rest = this.carry;
    this.carry = undefined;
    return rest?.length ? [{ bytes: rest, partial: true }] : [];
  }
}

/** Whether the record's bytes are exactly the UTF-8 of a string PostgreSQL can store as text. */
export function isPlainText(bytes: Buffer): boolean {
  return !bytes.includes(0) && isUtf8(bytes);
}

function sequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

const hex = (byte: number) => `\\x${byte.toString(16).padStart(2, '0')}`;

/**
 * escapeBytes is the visible form of a record that is not plain text: valid UTF-8 characters as they are,
 * a backslash as `\\`, and every NUL byte or byte that is not part of a valid UTF-8 character as `\xNN`
 * (two lower-case hex digits). It is unambiguous because it is only used for such records, which the API
 * marks by sending their exact bytes beside the line.
 */
export function escapeBytes(bytes: Buffer): string {
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const byte = bytes[i];
    if (byte === 0) out += '\\x00';
    else if (byte === 0x5c) out += '\\\\';
    else if (byte < 0x80) out += String.fromCharCode(byte);
    else {
      const length = sequenceLength(byte);
      const sequence = bytes.subarray(i, i + length);
      if (length && sequence.length === length && isUtf8(sequence)) {
        out += sequence.toString('utf8');
        i += length;
        continue;
      }
      out += hex(byte);
    }
    i++;
  }
  return out;
}

export interface StoredForm {
  /** The API's string: the text itself, or its escaped form. */
  line: string;
  /** The exact bytes, kept only when `line` had to be escaped (otherwise `line` is exact). */
  bytes: Buffer | null;
}

/** storedForm is what a record becomes in `step_logs`: plain text as is, anything else escaped plus its bytes. */
export function storedForm(bytes: Buffer): StoredForm {
  if (isPlainText(bytes)) return { line: bytes.toString('utf8'), bytes: null };
  return { line: escapeBytes(bytes), bytes: Buffer.from(bytes) };
}
