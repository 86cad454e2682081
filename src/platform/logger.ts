import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** `json`: one JSON object a line (for log collectors); `pretty`: a short line a person reads. */
export type LogFormat = 'json' | 'pretty';

/** Lines wait for this many bytes, or for FLUSH_MS, before they are written. */
const BUFFER_BYTES = 4096;
const FLUSH_MS = 1000;

export interface LoggerOptions {
  format: LogFormat;
  /** The trace and span ids, only when tracing is on (platform/tracing.ts). */
  mixin?: () => Record<string, string>;
}

/**
 * The process's logger, on stdout. JSON lines are buffered and written in batches: one write call per
 * access-log line was the largest single cost of a request after the response itself. A quiet
 * process still shows each line within FLUSH_MS, and pino writes out what is pending when the process
 * exits (a SIGKILL loses at most that last second). Pretty lines are for a terminal: written at once.
 */
export function createLogger(level: string, options: LoggerOptions): Logger {
  const settings = { level, base: { service: 'plinth' }, ...(options.mixin ? { mixin: options.mixin } : {}) };
  if (options.format === 'pretty')
    return pino(
      settings,
      prettyDestination((line) => process.stdout.write(line)),
    );
  const destination = pino.destination({ sync: false, minLength: BUFFER_BYTES });
  setInterval(() => destination.flush(), FLUSH_MS).unref();
  return pino(settings, destination);
}

/**
 * chooseLogFormat: LOG_FORMAT when set, else pretty on a terminal and JSON anywhere else (a file, a
 * pipe, a log collector).
 */
export function chooseLogFormat(setting: LogFormat | undefined, stdoutIsTerminal: boolean): LogFormat {
  return setting ?? (stdoutIsTerminal ? 'pretty' : 'json');
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, or that the line's start already shows. */
const SHOWN = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname', 'err']);

/** A pino destination that writes each JSON line as a pretty one. */
export function prettyDestination(write: (line: string) => void): DestinationStream {
  return { write: (json: string) => write(prettyLine(JSON.parse(json))) };
}

/**
 * prettyLine: `12:03:04 INFO  served request method=GET statusCode=200`, the error's message at the
 * end, and its stack below only at error level and above (a warning about a retried fault is one line).
 */
export function prettyLine(entry: Record<string, unknown>): string {
  const level = Number(entry.level);
  const time = new Date(Number(entry.time)).toTimeString().slice(0, 8);
  const fields = Object.entries(entry)
    .filter(([key, value]) => !SHOWN.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${fieldText(value)}`);
  const err = entry.err as { message?: string; stack?: string } | undefined;
  if (err?.message) fields.push(`error=${quoted(err.message)}`);
  const msg = typeof entry.msg === 'string' ? visible(entry.msg) : undefined;
  const line = [time, (LEVEL_NAMES[level] ?? String(level)).padEnd(5), msg, ...fields].filter((part) => part !== undefined && part !== '').join(' ');
  const stack = level >= 50 && err?.stack ? `\n${indent(err.stack.split('\n').map(visible).join('\n'))}` : '';
  return `${line}${stack}\n`;
}

/** C0 and C1 control characters and DEL: what a tenant's names could carry to move a terminal's cursor or retitle it. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** visible writes every control character as \u00XX, so nothing a tenant named reaches the operator's terminal as an escape. */
function visible(text: string): string {
  return text.replace(CONTROL, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function quoted(value: unknown): string {
  return visible(JSON.stringify(value) ?? String(value));
}

function fieldText(value: unknown): string {
  if (typeof value === 'string' && /^[^\s"=\u0000-\u001f\u007f-\u009f]+$/.test(value)) return value;
  return quoted(value);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
