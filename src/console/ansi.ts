// Terminal colours in log lines, turned into pieces of text with class names the console's stylesheet
// colours (never inline styles, which its Content-Security-Policy forbids). Only SGR sequences (colour,
// bold, dim, italic, underline) are kept; every other escape (cursor moves, titles, links) is dropped.
// Each line starts plain: a colour left on at the end of one line does not carry into the next.

export interface AnsiSpan {
  text: string;
  /** Space-separated class names, empty for plain text. */
  classes: string;
}

interface Style {
  fg?: number;
  bg?: number;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
}

// CSI (ESC [ … final byte), OSC (ESC ] … BEL or ESC \), or any other two-byte escape.
const ESCAPE = /\x1b\[([0-?]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)|\x1b[@-Z\\-_]?/g;

/** The 16 colours of xterm, to which 256-colour and true-colour codes are brought to the nearest. */
const BASE_RGB: [number, number, number][] = [
  [0, 0, 0],
  [205, 0, 0],
  [0, 205, 0],
  [205, 205, 0],
  [0, 0, 238],
  [205, 0, 205],
  [0, 205, 205],
  [229, 229, 229],
  [127, 127, 127],
  [255, 0, 0],
  [0, 255, 0],
  [255, 255, 0],
  [92, 92, 255],
  [255, 0, 255],
  [0, 255, 255],
  [255, 255, 255],
];

/** The text a terminal would leave showing: what follows the last carriage return (progress bars redraw that way). */
function lastRedraw(line: string): string {
  const trimmed = line.endsWith('\r') ? line.slice(0, -1) : line;
  const at = trimmed.lastIndexOf('\r');
  return at === -1 ? trimmed : trimmed.slice(at + 1);
}

/** ansiSpans splits a log line into runs of text of one style each. */
export function ansiSpans(line: string): AnsiSpan[] {
  const text = lastRedraw(line);
  const spans: AnsiSpan[] = [];
  let style: Style = {};
  let from = 0;
  const push = (piece: string) => {
    if (!piece) return;
    const classes = classesOf(style);
    const last = spans[spans.length - 1];
    if (last && last.classes === classes) last.text += piece;
    else spans.push({ text: piece, classes });
  };
  for (const match of text.matchAll(ESCAPE)) {
    push(text.slice(from, match.index));
    from = match.index + match[0].length;
    if (match[2] === 'm') style = applySgr(style, match[1]);
  }
  push(text.slice(from));
  return spans;
}

function classesOf(style: Style): string {
  const classes: string[] = [];
  if (style.fg !== undefined) classes.push(`a-fg${style.fg}`);
  if (style.bg !== undefined) classes.push(`a-bg${style.bg}`);
  if (style.bold) classes.push('a-b');
  if (style.dim) classes.push('a-d');
  if (style.italic) classes.push('a-i');
  if (style.underline) classes.push('a-u');
  return classes.join(' ');
}

/** The style after one SGR sequence's parameters (`1;31`, `38;5;208`, `38:2:255:128:0`, or empty for a reset). */
function applySgr(current: Style, parameters: string): Style {
  const codes = parameters === '' ? [0] : parameters.split(/[;:]/).map((p) => (p === '' ? 0 : Number(p)));
  let style = { ...current };
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i];
    if (code === 0) style = {};
    else if (code === 1) style.bold = true;
    else if (code === 2) style.dim = true;
    else if (code === 3) style.italic = true;
    else if (code === 4) style.underline = true;
    else if (code === 22) style.bold = style.dim = false;
    else if (code === 23) style.italic = false;
    else if (code === 24) style.underline = false;
    else if (code >= 30 && code <= 37) style.fg = code - 30;
    else if (code >= 90 && code <= 97) style.fg = code - 90 + 8;
    else if (code === 39) style.fg = undefined;
    else if (code >= 40 && code <= 47) style.bg = code - 40;
    else if (code >= 100 && code <= 107) style.bg = code - 100 + 8;
    else if (code === 49) style.bg = undefined;
    else if (code === 38 || code === 48) {
      const { colour, used } = extendedColour(codes, i + 1);
      if (code === 38) style.fg = colour;
      else style.bg = colour;
      i += used;
    }
  }
  return style;
}

/** A `5;n` or `2;r;g;b` colour after 38 or 48, as one of the 16, and how many parameters it took. */
function extendedColour(codes: number[], at: number): { colour?: number; used: number } {
  if (codes[at] === 5) return { colour: codes[at + 1] === undefined ? undefined : nearestBase(rgbOf256(codes[at + 1])), used: 2 };
  if (codes[at] === 2) return { colour: nearestBase([codes[at + 1] ?? 0, codes[at + 2] ?? 0, codes[at + 3] ?? 0]), used: 4 };
  return { used: 0 };
}

function rgbOf256(n: number): [number, number, number] {
  if (n < 16) return BASE_RGB[Math.max(0, n)];
  if (n >= 232) {
    const grey = 8 + 10 * (Math.min(n, 255) - 232);
    return [grey, grey, grey];
  }
  const level = [0, 95, 135, 175, 215, 255];
  const cube = n - 16;
  return [level[Math.floor(cube / 36)], level[Math.floor(cube / 6) % 6], level[cube % 6]];
}

function nearestBase([r, g, b]: [number, number, number]): number {
  let best = 0;
  let bestDistance = Number.POSITIVE_INFINITY;
  BASE_RGB.forEach(([br, bg, bb], index) => {
    const distance = (r - br) ** 2 + (g - bg) ** 2 + (b - bb) ** 2;
    if (distance < bestDistance) {
      best = index;
      bestDistance = distance;
    }
  });
  return best;
}
