// How a command prints: data on stdout as a table, JSON or YAML; diagnostics on stderr; colour only on
// a terminal and never with NO_COLOR.

import { toYaml } from './yaml.ts';
import { UsageError } from './exit-codes.ts';
import { stderr, stdout, type TextOut } from './stdio.ts';

export const OUTPUT_FORMATS = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function parseFormat(value: string): OutputFormat {
  const format = value.toLowerCase();
  if (!(OUTPUT_FORMATS as readonly string[]).includes(format)) throw new UsageError(`-o must be one of ${OUTPUT_FORMATS.join(', ')}, not "${value}"`);
  return format as OutputFormat;
}

/** A table column: its header, how to read it from a row, and whether only `-o wide` shows it (ids, mostly). */
export type Column<T> = [header: string, read: (row: T) => unknown, only?: 'wide'];

const COLOURS = { red: 31, green: 32, yellow: 33, blue: 34, dim: 2 } as const;

/** useColour: only when the stream is a terminal and NO_COLOR is unset or empty (no-color.org). */
export function useColour(stream: TextOut, env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR;
}

export class Output {
  constructor(readonly format: OutputFormat) {}

  get stdout(): TextOut {
    return stdout;
  }

  get stderr(): TextOut {
    return stderr;
  }

  /** Whether output is for people (a table, narrow or wide) rather than a document for programs. */
  get human(): boolean {
    return this.format === 'table' || this.format === 'wide';
  }

  paint(text: string, colour: keyof typeof COLOURS, stream = this.stdout): string {
    return useColour(stream) ? `\u001b[${COLOURS[colour]}m${text}\u001b[0m` : text;
  }

  /** A status in the colour people expect of it (on a terminal). */
  status(status: string, stream = this.stdout): string {
    if (status === 'SUCCEEDED') return this.paint(status, 'green', stream);
    if (status === 'FAILED') return this.paint(status, 'red', stream);
    if (status === 'WAITING_FOR_APPROVAL') return this.paint(status, 'yellow', stream);
    if (status === 'CANCELLED' || status === 'SKIPPED') return this.paint(status, 'dim', stream);
    return status;
  }

  /** A line for people, on stderr (what it quotes of the server's is made terminal-safe, its line breaks kept). */
  info(message: string) {
    this.stderr.write(`${terminalLines(message)}\n`);
  }

  /** A structured document (json or yaml) on stdout. */
  document(value: unknown) {
    this.stdout.write(this.format === 'yaml' ? toYaml(value) : `${JSON.stringify(value, null, 2)}\n`);
  }

  /** A list: a table of `columns`, or the whole items as a JSON array / YAML sequence. */
  list<T>(items: T[], allColumns: Column<T>[]) {
    if (!this.human) return this.document(items);
    const columns = allColumns.filter(([, , only]) => only === undefined || this.format === 'wide');
    const rows = items.map((item) => columns.map(([, read]) => cell(read(item))));
    const headers = columns.map(([h]) => h);
    const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells: string[], paint = (s: string) => s) =>
      cells
        .map((c, i) => (i === cells.length - 1 ? paint(c) : paint(c.padEnd(widths[i]))))
        .join('  ')
        .trimEnd() + '\n';
    this.stdout.write(line(headers, (s) => this.paint(s, 'dim')));
    for (const row of rows) this.stdout.write(line(row).replace(/\b(SUCCEEDED|FAILED|WAITING_FOR_APPROVAL|CANCELLED|SKIPPED)\b/g, (s) => this.status(s)));
  }

  /** One resource: `field  value` lines, or the whole resource as JSON / YAML. */
  item(value: object) {
    if (!this.human) return this.document(value);
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    const width = Math.max(0, ...entries.map(([k]) => k.length));
    for (const [key, v] of entries) this.stdout.write(`${this.paint(key.padEnd(width), 'dim')}  ${key === 'status' ? this.status(cell(v)) : cell(v)}\n`);
  }
}

/** Control characters: C0 but tab, DEL, and C1 (a lone 0x9b is a CSI on some terminals). */
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;
const SGR = /\u001b\[[0-9;]*m/g;

function visible(char: string): string {
  return `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;
}

/** terminalLines is terminalSafe for text whose line breaks are meant (a message, an error's details): each line made safe on its own. */
export function terminalLines(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => terminalSafe(line))
    .join('\n');
}

/**
 * terminalSafe makes text another tenant wrote (a name, a step's output) harmless to print on a
 * terminal: every control character becomes a visible `\xNN`, so no escape sequence can move the
 * cursor, retitle the window or hide text. Colour sequences (SGR) of log lines are kept when
 * `keepColour`, since tools such as OpenTofu colour their output, and dropped otherwise.
 */
export function terminalSafe(text: string, keepColour = false): string {
  const parts = text.split(SGR);
  const colours = keepColour ? (text.match(SGR) ?? []).map(withoutHiding) : [];
  const safe = parts.map((part, i) => part.replace(CONTROL, visible) + (colours[i] ?? '')).join('');
  // A colour left on would paint (or hide) whatever is printed next: each line ends with a reset.
  return colours.length ? `${safe}\u001b[0m` : safe;
}

/** An SGR sequence without blink (5, 6) and conceal (8): colour a line may keep, text it may not hide. */
function withoutHiding(sgr: string): string {
  const params = sgr
    .slice(2, -1)
    .split(';')
    .filter((p) => !['5', '6', '8'].includes(p));
  return `\u001b[${params.join(';')}m`;
}

function cell(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'object') return terminalSafe(JSON.stringify(value));
  return terminalSafe(String(value).replace(/[\r\n\t]+/g, ' '));
}
