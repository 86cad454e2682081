import type { Readable } from 'node:stream';
import type { ErrorBody } from '../../platform/schema.ts';
import { LineSplitter, type OutputRecord } from '../log-bytes.ts';
import type { LogSink, LogStats } from '../log-sink.ts';
import { engineError } from '../engine-errors.ts';
import type { OutputMask } from './output-mask.ts';

/**
 * Reading a pipe pauses while the sink holds more than this (pending plus in flight), and resumes once
 * its flushes have committed down to LOW_WATER_BYTES: a process that prints faster than the database
 * stores is slowed to the database's pace (its writes block on the full pipe), and the worker's memory
 * for a step's output stays near these few megabytes whatever the step prints.
 */
export const HIGH_WATER_BYTES = 2 * 1024 * 1024;
export const LOW_WATER_BYTES = 512 * 1024;

/**
 * captureOutput reads one of the process's pipes as bytes (never decoding it), cuts it into records
 * and writes them to the sink, with backpressure; `mask`, when given, takes the secrets out of the records
 * first, with a masker of this stream's own (it holds back the tail of a long line's partial record). Once
 * the log is truncated the rest is read and only counted, at pipe speed, so the process never blocks on a
 * pipe nobody reads.
 */
export function captureOutput(stream: Readable, name: 'stdout' | 'stderr', sink: LogSink, mask?: OutputMask): void {
  const splitter = new LineSplitter();
  const masker = mask?.forStream();
  const write = (records: OutputRecord[]) => {
    for (const record of records) sink.writeOutput(name, record.bytes, record.partial);
  };
  const writeAll = (records: OutputRecord[]) => write(masker ? records.flatMap((r) => masker.push(r)) : records);
  const writeRest = () => {
    writeAll(splitter.end());
    if (masker) write(masker.end());
  };
  stream.on('data', (chunk: Buffer) => {
    if (sink.stats.truncated) {
      writeRest();
      sink.discard(chunk.length);
      return;
    }
    writeAll(splitter.push(chunk));
    if (sink.queuedBytes > HIGH_WATER_BYTES && !sink.stats.truncated) {
      stream.pause();
      void sink.belowQueued(LOW_WATER_BYTES).then(() => stream.resume());
    }
  });
  stream.on('end', writeRest);
}

/** The step's statusDetail fields about its log: present only when something was left out. */
export function logDetail(stats: LogStats): Record<string, unknown> {
  return {
    ...(stats.truncated ? { logTruncated: true, logBytesSeen: stats.bytesSeen, logBytesStored: stats.bytesStored } : {}),
    ...(stats.linesLost ? { logLinesLost: stats.linesLost } : {}),
  };
}

/**
 * The error of a step whose log lines could not all be stored: it must not pass for a clean success. Why
 * they could not (a database error) is the worker's log's to tell, not the step's readers'.
 */
export function logStoreError(stats: LogStats): ErrorBody {
  return engineError('Engine:Log:STORE_FAILED', `${stats.linesLost} log line(s) of this step could not be stored; the worker's log has the cause`, {
    linesLost: stats.linesLost,
  });
}

/**
 * withLostLines is an outcome once lines that were to commit with it could not be stored: a success
 * becomes Engine:Log:STORE_FAILED, and the count of lost lines is in its statusDetail either way.
 */
export function withLostLines<O extends { status: 'SUCCEEDED' | 'FAILED'; error?: ErrorBody; statusDetail?: Record<string, unknown> }>(
  outcome: O,
  sink: LogSink,
): O {
  const statusDetail = { ...(outcome.statusDetail ?? {}), ...logDetail(sink.stats) };
  if (outcome.status === 'FAILED') return { ...outcome, statusDetail };
  return { ...outcome, status: 'FAILED', statusDetail, error: logStoreError(sink.stats) };
}
