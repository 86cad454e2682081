import { BadRequestError } from '../errors.ts';

/**
 * The input rules every request obeys before any schema validator, clone or query sees it
 * (docs/api-conventions.md, "Input rules"). Each is enforced here once: the JSON body parser and the
 * pre-validation hook of app.ts call these.
 */

/** Deepest nesting of arrays and objects a JSON body may have: well past any real body, far below a stack overflow. */
export const MAX_JSON_DEPTH = 64;
/** Keys that name an object's prototype: refused like any unknown key, wherever they appear in a body. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor']);
/** How many problems one 400 names; a hostile body could otherwise make a huge error. */
const MAX_PROBLEMS = 20;

/**
 * exceedsJsonDepth scans the raw body once and says whether it nests deeper than MAX_JSON_DEPTH, before
 * JSON.parse builds anything: brackets inside strings do not count.
 */
export function exceedsJsonDepth(text: string, maxDepth = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > maxDepth) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--;
    }
  }
  return false;
}

// In unicode mode a paired surrogate is one code point, so only a lone one matches.
const LONE_SURROGATE = /\p{Cs}/u;

/** What is wrong with one piece of text, or undefined: NUL cannot be stored by PostgreSQL, nor a lone surrogate in UTF-8. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(text)) return 'must not contain a lone surrogate (not valid Unicode)';
  return undefined;
}

function escapePointer(key: string | number): string {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * treeProblems walks a parsed JSON value (already depth-limited) and lists every string or key that
 * breaks the text rule, and every prototype key, each named by `<prefix><JSON Pointer>`.
 */
export function treeProblems(value: unknown, prefix: string): string[] {
  const problems: string[] = [];
  const path: (string | number)[] = [];
  const at = () => prefix + path.map((p) => '/' + escapePointer(p)).join('');
  const visit = (node: unknown): void => {
    if (problems.length >= MAX_PROBLEMS) return;
    if (typeof node === 'string') {
      const problem = textProblem(node);
      if (problem) problems.push(`${at()}: ${problem}`);
    } else if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        path.push(i);
        visit(node[i]);
        path.pop();
      }
    } else if (node !== null && typeof node === 'object') {
      for (const key of Object.keys(node)) {
        path.push(key);
        if (PROTOTYPE_KEYS.has(key)) problems.push(`${at()}: unknown or read-only field`);
        else {
          const problem = textProblem(key);
          if (problem) problems.push(`${at()}: the key ${problem}`);
        }
        visit((node as Record<string, unknown>)[key]);
        path.pop();
      }
    }
  };
  visit(value);
  return problems;
}

/**
 * parseJsonBody is the one JSON body parser: depth first (a cheap scan of the text), then JSON.parse,
 * then the text and prototype-key rules over the parsed tree. An empty body is no body.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  if (exceedsJsonDepth(text)) {
    throw new BadRequestError(
      `The request body nests deeper than ${MAX_JSON_DEPTH} levels`,
      [`body: nests deeper than ${MAX_JSON_DEPTH} arrays or objects`],
      'Api:Request:TOO_DEEP',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BadRequestError('The request body is not valid JSON', [], 'Api:Request:MALFORMED_JSON');
  }
  const problems = treeProblems(value, 'body');
  if (problems.length > 0) throw new BadRequestError('The request body breaks the input rules', problems);
  return value;
}

/** Query and path parameters arrive as decoded text: the same text rule, named `querystring/<name>` or `params/<name>`. */
export function assertTextParts(parts: { querystring?: unknown; params?: unknown }): void {
  const problems = [...treeProblems(parts.querystring, 'querystring'), ...treeProblems(parts.params, 'params')];
  if (problems.length > 0) throw new BadRequestError('The request breaks the input rules', problems);
}
