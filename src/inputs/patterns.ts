import vm from 'node:vm';
import safeRegex from 'safe-regex2';

/**
 * Safe `patterns`. Two layers, because no static check catches every slow expression:
 * 1. When a schema is stored, a pattern is refused if it does not compile, is longer than
 *    MAX_PATTERN_LENGTH, nests quantifiers (star height > 1, e.g. `(a+)+`, found by safe-regex2), has
 *    more than 25 quantifiers, or uses backreferences (which make matching exponential by nature).
 * 2. Every match runs in a separate V8 context with a MATCH_TIMEOUT_MS time bound, which catches what the
 *    static check misses (e.g. overlapping alternation `(a|a)*$`). A timed-out match is reported as a
 *    problem of the value, never as a pass.
 */
export const MAX_PATTERN_LENGTH = 512;
export const MATCH_TIMEOUT_MS = 50;

// Patterns are compiled without flags: `u` would change what a stored pattern means between engines.
const BACKREFERENCE = /\\[1-9]|\\k</;

/** patternProblem says why a pattern may not be stored, or undefined when it is safe. */
export function patternProblem(pattern: string): string | undefined {
  if (pattern.length > MAX_PATTERN_LENGTH) return `is longer than ${MAX_PATTERN_LENGTH} characters`;
  try {
    new RegExp(pattern);
  } catch (error) {
    return `is not a valid regular expression (${(error as Error).message})`;
  }
  if (BACKREFERENCE.test(pattern)) return 'uses a backreference, which can make matching exponentially slow';
  if (!safeRegex(pattern)) return 'can backtrack catastrophically (nested quantifiers or too many repetitions)';
  return undefined;
}

const compiled = new Map<string, RegExp>();
const MAX_CACHED = 1000;

function compile(pattern: string): RegExp {
  let re = compiled.get(pattern);
  if (!re) {
    re = new RegExp(pattern);
    if (compiled.size >= MAX_CACHED) compiled.delete(compiled.keys().next().value!);
    compiled.set(pattern, re);
  }
  return re;
}

const sandbox = vm.createContext({ re: /(?:)/, input: '' });
const runTest = new vm.Script('re.test(input)');

export type MatchResult = 'match' | 'no-match' | 'timeout' | 'invalid';

/** matchPattern tests a value against a pattern within MATCH_TIMEOUT_MS. */
export function matchPattern(pattern: string, input: string): MatchResult {
  let re: RegExp;
  try {
    re = compile(pattern);
  } catch {
    return 'invalid';
  }
  re.lastIndex = 0;
  sandbox.re = re;
  sandbox.input = input;
  try {
    return runTest.runInContext(sandbox, { timeout: MATCH_TIMEOUT_MS }) ? 'match' : 'no-match';
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return 'timeout';
    throw error;
  } finally {
    sandbox.input = '';
  }
}
