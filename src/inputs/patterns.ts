import { RE2JS, RE2JSException } from 're2js';
import { rewriteForSearch } from './pattern-rewrite.ts';

/**
 * User `patterns` are compiled and matched by RE2 (re2js, in JavaScript): it never backtracks, so a
 * match takes time linear in the length of the value whatever the pattern, and no match needs a time
 * limit. The price is RE2's syntax, which has no backreferences and no lookaround; a pattern RE2
 * cannot compile is refused when a schema is written. A match is a search, as JSON Schema's `pattern`
 * is: `^` and `$` anchor it (docs/inputs.md).
 */
export const MAX_PATTERN_LENGTH = 512;
/**
 * Linear time is still a cost per character and per instruction: `(a|aa){300}` is a short pattern but
 * thousands of instructions, which a match may all visit at every character. This admits `^.{1,256}$`.
 */
export const MAX_PROGRAM_SIZE = 1000;

type Compiled = { re: RE2JS; problem?: undefined } | { re?: undefined; problem: string };

function describe(error: unknown): string {
  if (!(error instanceof RE2JSException)) throw error;
  const reason = error.message.replace(/^error parsing regexp: /, '');
  return `is not a valid regular expression (${reason}); patterns are RE2 syntax, without backreferences or lookaround`;
}

/** The error names the user's text rather than the rewrite, which fails only where the pattern does. */
function syntaxProblem(pattern: string, rewriteError: unknown): string {
  try {
    RE2JS.compile(pattern);
  } catch (error) {
    return describe(error);
  }
  return describe(rewriteError);
}

function compileUncached(pattern: string): Compiled {
  if (pattern.length > MAX_PATTERN_LENGTH) return { problem: `is longer than ${MAX_PATTERN_LENGTH} characters` };
  let re: RE2JS;
  try {
    re = RE2JS.compile(rewriteForSearch(pattern));
  } catch (error) {
    return { problem: syntaxProblem(pattern, error) };
  }
  if (re.programSize() > MAX_PROGRAM_SIZE) {
    return { problem: `compiles to more than ${MAX_PROGRAM_SIZE} instructions; use smaller repetition counts` };
  }
  return { re };
}

/**
 * Compiling costs far more than matching (half a millisecond for `^.{1,256}$`, a microsecond to match
 * it), so compiled patterns are kept. A compiled pattern also keeps the DFA states its matches built,
 * which grow with the characters it has seen, to megabytes for a hostile one: the cache is bounded by
 * an estimate of that memory, not by a count. A unit is one instruction of one DFA state (about 16
 * bytes), states are at most one per character matched, and the least recently used pattern goes first.
 */
const MAX_CACHED_WEIGHT = 2 ** 23;
/** What a compiled program weighs before any match, in DFA states. */
const PROGRAM_STATES = 64;
const STATE_OVERHEAD = 20;
/**
 * RE2's DFA builds its states as a match meets them and keeps them: fast once built, but a pattern's
 * first characters mostly pay for states. Until a pattern has seen this many characters, it matches
 * with RE2's engines that keep nothing (its bounded backtracker, or its NFA on a longer value), which
 * are linear too.
 */
const DFA_AFTER_CHARS = 4096;

type Entry = Compiled & { weight: number; seen: number };
const cache = new Map<string, Entry>();
let cachedWeight = 0;

function stateWeight(entry: Compiled): number {
  return (entry.re?.programSize() ?? 0) + STATE_OVERHEAD;
}

function addWeight(entry: Entry, weight: number) {
  entry.weight += weight;
  cachedWeight += weight;
  if (cachedWeight <= MAX_CACHED_WEIGHT) return;
  for (const [pattern, oldest] of cache) {
    cache.delete(pattern);
    cachedWeight -= oldest.weight;
    if (cachedWeight <= MAX_CACHED_WEIGHT) return;
  }
}

function compile(pattern: string): Entry {
  let entry = cache.get(pattern);
  if (entry) {
    cache.delete(pattern);
    cache.set(pattern, entry);
    return entry;
  }
  entry = { ...compileUncached(pattern), weight: 0, seen: 0 };
  cache.set(pattern, entry);
  addWeight(entry, stateWeight(entry) * PROGRAM_STATES);
  return entry;
}

/** patternProblem says why a pattern may not be stored, or undefined when it may. */
export function patternProblem(pattern: string): string | undefined {
  return compile(pattern).problem;
}

function search(entry: Entry, re: RE2JS, input: string): boolean {
  entry.seen += input.length;
  if (entry.seen <= DFA_AFTER_CHARS) return re.matcher(input).find();
  addWeight(entry, stateWeight(entry) * input.length);
  return re.test(input);
}

export type MatchResult = 'match' | 'no-match' | 'invalid';

/** matchPattern searches a value for a pattern; a pattern that may not be stored is 'invalid', never a pass. */
export function matchPattern(pattern: string, input: string): MatchResult {
  const entry = compile(pattern);
  if (!entry.re) return 'invalid';
  return search(entry, entry.re, input) ? 'match' : 'no-match';
}
