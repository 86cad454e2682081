import vm from 'node:vm';
import safeRegex from 'safe-regex2';
import { AppError } from '../platform/errors.ts';

/**
 * Safe `patterns`. Two layers, because no static check catches every slow expression:
 * 1. When a schema is stored, a pattern is refused if it does not compile, is longer than
 *    MAX_PATTERN_LENGTH, nests quantifiers (star height > 1, e.g. `(a+)+`, found by safe-regex2), has
 *    more than 25 quantifiers, or uses backreferences (which make matching exponential by nature).
 * 2. Every match runs in a separate V8 context with a MATCH_TIMEOUT_MS time bound, which catches what the
 *    static check misses (e.g. overlapping alternation `(a|a)*$`). A timed-out match is reported as a
 *    problem of the value, never as a pass.
 * 3. All the matches of one request share a PatternBudget of REQUEST_PATTERN_BUDGET_MS: many slow
 *    matches (many values, many patterns, or a schema change re-checking every stored value) cannot add
 *    up to a blocked server. A request that spends it is a 422 `Api:Request:CHECK_BUDGET_EXCEEDED`.
 */
export const MAX_PATTERN_LENGTH = 512;
export const MATCH_TIMEOUT_MS = 40;
export const REQUEST_PATTERN_BUDGET_MS = 80;

/** 422: the request's pattern checks needed more time than one request may spend on them. */
export class PatternBudgetExceededError extends AppError {
  constructor(budgetMs: number) {
    super(422, 'Api:Request:CHECK_BUDGET_EXCEEDED', `Checking the values against their patterns took longer than this request may spend (${budgetMs} ms in all); use simpler patterns or fewer, shorter values`);
  }
}

/** The time one request may still spend matching patterns; every match draws on it. */
export class PatternBudget {
  private remainingMs: number;
  constructor(readonly totalMs = REQUEST_PATTERN_BUDGET_MS) {
    this.remainingMs = totalMs;
  }
  get remaining(): number {
    return this.remainingMs;
  }
  spend(ms: number): void {
    this.remainingMs -= ms;
  }
  exceeded(): PatternBudgetExceededError {
    return new PatternBudgetExceededError(this.totalMs);
  }
}

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
// The first run in a context, and the first with a time limit (which starts V8's watchdog), cost
// milliseconds on a busy machine: pay them now, not inside the first request's budget.
runTest.runInContext(sandbox, { timeout: 1000 });

export type MatchResult = 'match' | 'no-match' | 'timeout' | 'invalid';

/** CPU time this process has used, in ms: what a match costs the server, whatever else the machine runs. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** A run that ends on the wall-clock limit with less CPU than this share of it was descheduled, not slow. */
const BUSY_SHARE = 0.8;
const MAX_RETRIES = 20;

/**
 * matchPattern tests a value against a pattern within MATCH_TIMEOUT_MS and what is left of the budget;
 * it throws PatternBudgetExceededError once the budget is spent. Limits and budget count the CPU time
 * the match took: V8's limit is wall-clock, so on a machine busier than its cores a match that ran out
 * of wall time without using most of it on the CPU is run again for what is left, rather than refused.
 * On an idle machine CPU and wall time are the same, and no match blocks the server longer than the limit.
 */
export function matchPattern(pattern: string, input: string, budget: PatternBudget = new PatternBudget()): MatchResult {
  let re: RegExp;
  try {
    re = compile(pattern);
  } catch {
    return 'invalid';
  }
  let spent = 0;
  for (let attempt = 0; ; attempt++) {
    if (budget.remaining <= 0) throw budget.exceeded();
    const limit = Math.min(MATCH_TIMEOUT_MS - spent, budget.remaining);
    const outcome = runOnce(re, input, limit);
    spent += outcome.cpuMs;
    budget.spend(outcome.cpuMs);
    if (outcome.result !== 'timeout') return outcome.result;
    const descheduled = outcome.cpuMs < limit * BUSY_SHARE && attempt < MAX_RETRIES;
    if (descheduled && spent < MATCH_TIMEOUT_MS) continue;
    if (MATCH_TIMEOUT_MS - spent > budget.remaining || budget.remaining <= 0) throw budget.exceeded();
    return 'timeout';
  }
}

function runOnce(re: RegExp, input: string, limitMs: number): { result: 'match' | 'no-match' | 'timeout'; cpuMs: number } {
  re.lastIndex = 0;
  sandbox.re = re;
  sandbox.input = input;
  const started = cpuMs();
  try {
    return { result: runTest.runInContext(sandbox, { timeout: Math.max(1, Math.ceil(limitMs)) }) ? 'match' : 'no-match', cpuMs: cpuMs() - started };
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw error;
    return { result: 'timeout', cpuMs: cpuMs() - started };
  } finally {
    sandbox.input = '';
  }
}
