import { cutPoint, MAX_RECORD_BYTES, type OutputRecord } from '../log-bytes.ts';
import { NeedleSearch } from './needle-search.ts';

/** What a hidden value reads as in the log. */
const MASK = Buffer.from('***');

const EMPTY = Buffer.alloc(0);

/**
 * OutputMask holds the byte strings a step's log must not show. Each stream of the process gets its own
 * StreamMasker from it: a masker keeps the unfinished tail of a long line, which only its stream may continue.
 */
export class OutputMask {
  private readonly search: NeedleSearch;

  constructor(needles: string[]) {
    this.search = new NeedleSearch([...new Set(needles)].map((n) => Buffer.from(n, 'utf8')));
  }

  forStream(maxRecordBytes = MAX_RECORD_BYTES): StreamMasker {
    return new StreamMasker(this.search, maxRecordBytes);
  }
}

/**
 * StreamMasker replaces every needle in the records of one stream with `***`, the longest needle winning
 * where several start at the same byte, the leftmost where they overlap. A long line reaches it as several
 * partial records; a needle cut by a record boundary is still found because the masker holds back the
 * last bytes of a partial record (up to the longest needle less one byte, plus a few so as not to split a
 * UTF-8 character) and puts them before the next record. Every byte comes out once, masked exactly as if
 * the line had come in one piece; the record that ends the line, or `end`, gives the held bytes back.
 */
export class StreamMasker {
  private held: Buffer = EMPTY;

  constructor(
    private readonly search: NeedleSearch,
    private readonly maxRecordBytes = MAX_RECORD_BYTES,
  ) {}

  /** push masks one record of the stream; the records it returns may be fewer (bytes held back) or more (held bytes added). */
  push(record: OutputRecord): OutputRecord[] {
    if (this.search.isEmpty) return [record];
    const buf = this.held.length ? Buffer.concat([this.held, record.bytes]) : record.bytes;
    const { masked, settledTo } = maskSettled(this.search, buf, !record.partial);
    this.held = settledTo < buf.length ? Buffer.from(buf.subarray(settledTo)) : EMPTY;
    if (record.partial && masked.length === 0) return [];
    return splitRecords(masked, record.partial, this.maxRecordBytes);
  }

  /** end gives back the bytes held once the stream has ended (its output did not end with a newline). */
  end(): OutputRecord[] {
    const held = this.held;
    this.held = EMPTY;
    if (!held.length) return [];
    return splitRecords(maskSettled(this.search, held, true).masked, true, this.maxRecordBytes);
  }
}

/**
 * maskSettled masks the part of `buf` no later byte can change, and says where the rest begins. Unless the
 * line ends with `buf` (`final`), a needle is taken only where every needle would fit in `buf` after that
 * offset: a longer needle starting at the same byte might otherwise go on in the next record. What remains
 * after the last offset so decided is left for the next record, cut at a character boundary.
 */
function maskSettled(search: NeedleSearch, buf: Buffer, final: boolean): { masked: Buffer; settledTo: number } {
  const lengths = search.longestAt(buf);
  const decidable = final ? buf.length : Math.min(buf.length, buf.length - search.longest + 1);
  const parts: Buffer[] = [];
  let copiedTo = 0;
  let at = 0;
  while (at < decidable) {
    if (lengths[at] === 0) {
      at++;
      continue;
    }
    parts.push(buf.subarray(copiedTo, at), MASK);
    at += lengths[at];
    copiedTo = at;
  }
  const settledTo = final ? buf.length : cutPoint(buf, copiedTo, at);
  parts.push(buf.subarray(copiedTo, settledTo));
  return { masked: parts.length === 1 ? parts[0] : Buffer.concat(parts), settledTo };
}

/**
 * splitRecords keeps masked output within the record size: held bytes put before a record can make it
 * longer than the splitter's records, and readers count on a record being at most that.
 */
function splitRecords(bytes: Buffer, partial: boolean, maxBytes: number): OutputRecord[] {
  const records: OutputRecord[] = [];
  let start = 0;
  while (bytes.length - start > maxBytes) {
    const cut = cutPoint(bytes, start, start + maxBytes);
    records.push({ bytes: bytes.subarray(start, cut), partial: true });
    start = cut;
  }
  records.push({ bytes: bytes.subarray(start), partial });
  return records;
}
