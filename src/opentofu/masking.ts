import { OutputMask } from '../engine/runners/output-mask.ts';

/**
 * The fewest bytes a secret, or a line or JSON string of one, must have to be masked on its own. Shorter
 * fragments (`}`, `ok`, an empty line of a PEM key) occur all over ordinary output: masking them would
 * blank out the log and hide nothing worth hiding.
 */
export const MIN_MASKED_BYTES = 3;

/**
 * maskSecrets is the mask of an OpenTofu step's log: each secret (a sensitive value, JSON for a non-string,
 * or the run credential) becomes `***` wherever the log shows it, as it is or quoted as OpenTofu, Go, JSON
 * and shells print strings, and so does each line of a multi-line one and each string inside a JSON one.
 */
export function maskSecrets(secrets: string[]): OutputMask {
  const needles = secretNeedles(secrets);
  const bytes = needles.reduce((sum, n) => sum + Buffer.byteLength(n), 0);
  if (bytes > MAX_MASKED_FORM_BYTES) throw new MaskTooLargeError(bytes);
  return new OutputMask(needles);
}

/**
 * The most bytes of printed forms one step's mask searches for. Its search grows with them (tens of
 * bytes of memory per byte), and the stack's members choose them: a few PEM keys and JSON credentials
 * are tens of KiB; a step whose sensitive values are past this fails rather than log them unmasked.
 */
export const MAX_MASKED_FORM_BYTES = 1024 * 1024;

export class MaskTooLargeError extends Error {
  constructor(readonly bytes: number) {
    super(
      `The stack's sensitive values make ${bytes} bytes of text to mask in the step's log, more than the ${MAX_MASKED_FORM_BYTES} Plinth masks: make them fewer or smaller`,
    );
  }
}

/** secretNeedles is every byte string maskSecrets hides: the printed forms of each piece of each secret. */
export function secretNeedles(secrets: string[]): string[] {
  const needles = new Set<string>();
  for (const piece of secretPieces(secrets)) {
    // A log record never holds a newline: a form with one could never match.
    for (const form of printedForms(piece)) if (!form.includes('\n')) needles.add(form);
  }
  return [...needles];
}

/**
 * The parts of a secret that may be printed on their own: the whole of it, each line of it trimmed
 * (OpenTofu prints a multi-line string as a heredoc, a line at a time and re-indented, and a PEM key is
 * logged a line per record), and the same again for each string inside it when it is a JSON object or
 * array (a map variable, a JSON key file in a string: OpenTofu prints those an attribute per line).
 */
export function secretPieces(secrets: string[]): string[] {
  const pieces = new Set<string>();
  // Loops, not spreads: a JSON secret may hold more strings than a call takes arguments.
  const pending = [...secrets];
  while (pending.length) {
    const value = pending.pop()!;
    pieces.add(value);
    for (const line of value.split('\n')) pieces.add(line.trim());
    // Each string inside a JSON text is shorter than the text: this ends.
    for (const inner of jsonStrings(value)) pending.push(inner);
  }
  return [...pieces].filter((p) => Buffer.byteLength(p) >= MIN_MASKED_BYTES);
}

/** The string values inside `text` when it is a JSON object or array (keys name things; they are not secret). */
function jsonStrings(text: string): string[] {
  if (!/^\s*[[{]/.test(text)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const strings: string[] = [];
  const pending = [parsed];
  while (pending.length) {
    const value = pending.pop();
    if (typeof value === 'string') strings.push(value);
    else if (value && typeof value === 'object') for (const inner of Object.values(value)) pending.push(inner);
  }
  return strings;
}

/** printedForms is `text` as is and as each quoting that may print it escapes it (between the quotes). */
export function printedForms(text: string): string[] {
  return [text, jsonEscaped(text), goJsonEscaped(text), goQuoted(text), hclQuoted(text), shellSingleQuoted(text), shellBackslashed(text), ansiCQuoted(text)];
}

/** JSON as JavaScript writes it (a tool, or Plinth's own var file). */
function jsonEscaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

const GO_JSON_HTML_ESCAPES = new Map([
  ['<', '\\u003c'],
  ['>', '\\u003e'],
  ['&', '\\u0026'],
  ['\u2028', '\\u2028'],
  ['\u2029', '\\u2029'],
]);

/** JSON as Go's encoding/json writes it (OpenTofu's `-json` output): also `<`, `>`, `&`, U+2028 and U+2029 escaped. */
function goJsonEscaped(text: string): string {
  return jsonEscaped(text).replace(/[<>&\u2028\u2029]/g, (ch) => GO_JSON_HTML_ESCAPES.get(ch)!);
}

const GO_NAMED_ESCAPES = new Map([
  ['\x07', '\\a'],
  ['\b', '\\b'],
  ['\f', '\\f'],
  ['\n', '\\n'],
  ['\r', '\\r'],
  ['\t', '\\t'],
  ['\v', '\\v'],
  ['"', '\\"'],
  ['\\', '\\\\'],
]);

/** Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
function isGoPrintable(ch: string): boolean {
  return ch === ' ' || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(ch);
}

function goUnicodeEscape(ch: string): string {
  const code = ch.codePointAt(0)!;
  return code < 0x10000 ? `\\u${code.toString(16).padStart(4, '0')}` : `\\U${code.toString(16).padStart(8, '0')}`;
}

/** Go's strconv.Quote (`%q`): how OpenTofu's plan output, `tofu console` and its diagnostics print a one-line string. */
function goQuoted(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (GO_NAMED_ESCAPES.has(ch)) out += GO_NAMED_ESCAPES.get(ch);
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += isGoPrintable(ch) ? ch : goUnicodeEscape(ch);
  }
  return out;
}

const HCL_NAMED_ESCAPES = new Map([
  ['\n', '\\n'],
  ['\r', '\\r'],
  ['\t', '\\t'],
  ['"', '\\"'],
  ['\\', '\\\\'],
]);

/** An HCL quoted string as hclwrite writes it (OpenTofu's generated configuration): templates' `${` and `%{` doubled. */
function hclQuoted(text: string): string {
  const chars = [...text];
  let out = '';
  chars.forEach((ch, i) => {
    if (HCL_NAMED_ESCAPES.has(ch)) out += HCL_NAMED_ESCAPES.get(ch);
    else if ((ch === '$' || ch === '%') && chars[i + 1] === '{') out += ch + ch;
    else out += isGoPrintable(ch) ? ch : goUnicodeEscape(ch);
  });
  return out;
}

/** POSIX single quotes, `'…'\''…'`: bash's `set -x` trace and `${var@Q}`. */
function shellSingleQuoted(text: string): string {
  return text.replaceAll("'", "'\\''");
}

/** The characters bash's `printf %q` puts a backslash before anywhere in a word (the table in bash's shquote.c). */
const SHELL_SPECIAL = new Set([...' \t\n!"$&\'()*,;<>?[\\]^`{|}']);

/** bash's `printf %q` of a string of printable characters: a backslash before each special one. */
function shellBackslashed(text: string): string {
  const chars = [...text];
  return chars
    .map((ch, i) => {
      const special = SHELL_SPECIAL.has(ch) || (ch === '#' && i === 0) || (ch === '~' && (i === 0 || chars[i - 1] === '=' || chars[i - 1] === ':'));
      return special ? `\\${ch}` : ch;
    })
    .join('');
}

const ANSI_C_NAMED_ESCAPES = new Map([
  ['\x07', '\\a'],
  ['\b', '\\b'],
  ['\x1b', '\\E'],
  ['\f', '\\f'],
  ['\n', '\\n'],
  ['\r', '\\r'],
  ['\t', '\\t'],
  ['\v', '\\v'],
  ['\\', '\\\\'],
  ["'", "\\'"],
]);

/** bash's `$'…'`: what its `printf %q` prints for a string with a control character (a newline, say). */
function ansiCQuoted(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ANSI_C_NAMED_ESCAPES.has(ch)) out += ANSI_C_NAMED_ESCAPES.get(ch);
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, '0')}`;
    else out += ch;
  }
  return out;
}
