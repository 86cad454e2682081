import { matchPattern } from './patterns.ts';
import { isReferenceValue, REFERENCE_KEY } from './references.ts';
import type { InputProperty, InputPropertyOf } from './inputs.schema.ts';

/** One problem of a value: where (a JSON Pointer into the value, '' for the value itself) and what. */
export interface Problem {
  path: string;
  message: string;
}

type Json = unknown;

function isObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pointer(path: string, key: string | number): string {
  return `${path}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

function isMissing(value: Json): boolean {
  return value === undefined || value === null;
}

/** For a text input an empty string is as good as nothing: a form sends "" for an untouched field. */
function isMissingFor(property: InputProperty, value: Json): boolean {
  return isMissing(value) || (value === '' && (property.type === 'string' || property.type === 'text'));
}

/** `show_when` holds sibling id → expected value or list of values; every entry must match. */
export function isShown(property: { show_when?: Record<string, unknown> }, siblings: Record<string, Json>): boolean {
  if (!property.show_when) return true;
  return Object.entries(property.show_when).every(([id, expected]) => {
    const actual = siblings[id];
    return Array.isArray(expected) ? expected.some((e) => deepEqual(e, actual)) : deepEqual(expected, actual);
  });
}

function deepEqual(a: Json, b: Json): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function checkPatterns(patterns: { pattern: string; message: string }[] | undefined, input: string, path: string, out: Problem[]) {
  for (const { pattern, message } of patterns ?? []) {
    const result = matchPattern(pattern, input);
    if (result === 'no-match') out.push({ path, message });
    else if (result === 'invalid') out.push({ path, message: `cannot be checked: ${pattern} is not a valid pattern` });
  }
}

function checkCount(count: number, p: { min_items?: number; max_items?: number }, path: string, out: Problem[], noun = 'items') {
  if (p.min_items !== undefined && count < p.min_items) out.push({ path, message: `must have at least ${p.min_items} ${noun}` });
  if (p.max_items !== undefined && count > p.max_items) out.push({ path, message: `must have at most ${p.max_items} ${noun}` });
}

function checkOptions(values: { value: string }[] | undefined, input: string, path: string, out: Problem[]) {
  if (values && values.length > 0 && !values.some((o) => o.value === input)) {
    out.push({ path, message: `must be one of ${values.map((o) => JSON.stringify(o.value)).join(', ')}` });
  }
}

/** Validates an object against a list of child properties: unknown keys, required-when-shown, each child. */
function checkFields(properties: InputProperty[], value: Record<string, Json>, path: string, out: Problem[], allowed: string[] = []) {
  const known = new Set([...properties.map((p) => p.id), ...allowed]);
  for (const key of Object.keys(value)) {
    if (!known.has(key)) out.push({ path: pointer(path, key), message: 'is not an input of this schema' });
  }
  for (const child of properties) {
    const childValue = value[child.id];
    if (isMissingFor(child, childValue)) {
      if (child.required && isShown(child, value)) out.push({ path: pointer(path, child.id), message: 'is required' });
      continue;
    }
    check(child, childValue, pointer(path, child.id), out);
  }
}

function checkString(p: InputPropertyOf<'string'> | InputPropertyOf<'text'>, value: Json, path: string, out: Problem[]) {
  if (typeof value !== 'string') return out.push({ path, message: 'must be a string' });
  if (p.type === 'text') {
    if (p.min_length !== undefined && value.length < p.min_length) out.push({ path, message: `must be at least ${p.min_length} characters` });
    if (p.max_length !== undefined && value.length > p.max_length) out.push({ path, message: `must be at most ${p.max_length} characters` });
  } else {
    checkOptions(p.values, value, path, out);
  }
  checkPatterns(p.patterns, value, path, out);
}

function checkNumber(p: InputPropertyOf<'number'>, value: Json, path: string, out: Problem[]) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return out.push({ path, message: 'must be a number' });
  if (p.integer && !Number.isInteger(value)) out.push({ path, message: 'must be an integer' });
  if (p.min !== undefined && value < p.min) out.push({ path, message: `must be at least ${p.min}` });
  if (p.max !== undefined && value > p.max) out.push({ path, message: `must be at most ${p.max}` });
  if (p.step !== undefined && p.step > 0) {
    const steps = (value - (p.min ?? 0)) / p.step;
    if (Math.abs(steps - Math.round(steps)) > 1e-9) out.push({ path, message: `must be ${p.min ?? 0} plus a multiple of ${p.step}` });
  }
}

function checkStringArray(p: InputPropertyOf<'string_array'>, value: Json, path: string, out: Problem[]) {
  if (!Array.isArray(value)) return out.push({ path, message: 'must be an array of strings' });
  checkCount(value.length, p, path, out);
  const seen = new Set<string>();
  value.forEach((item, i) => {
    const at = pointer(path, i);
    if (typeof item !== 'string') return out.push({ path: at, message: 'must be a string' });
    if (p.unique && seen.has(item)) out.push({ path: at, message: 'is a duplicate' });
    seen.add(item);
    checkOptions(p.values, item, at, out);
    checkPatterns(p.patterns, item, at, out);
  });
}

function checkMap(p: InputPropertyOf<'object_map'> | InputPropertyOf<'key_value'>, value: Json, path: string, out: Problem[]) {
  if (!isObject(value)) return out.push({ path, message: 'must be an object' });
  const entries = Object.entries(value);
  checkCount(entries.length, p, path, out, 'entries');
  for (const [key, entry] of entries) {
    const at = pointer(path, key);
    for (const { pattern, message } of p.key_patterns ?? []) {
      if (matchPattern(pattern, key) !== 'match') out.push({ path: at, message: `key: ${message}` });
    }
    if (p.type === 'key_value') {
      if (typeof entry !== 'string') out.push({ path: at, message: 'must be a string' });
      else checkPatterns(p.value_patterns, entry, at, out);
    } else if (!isObject(entry)) {
      out.push({ path: at, message: 'must be an object' });
    } else {
      checkFields(p.properties, entry, at, out);
    }
  }
}

function checkCompound(p: InputPropertyOf<'compound'>, value: Json, path: string, out: Problem[]) {
  if (!isObject(value)) return out.push({ path, message: 'must be an object' });
  const option = p.options.find((o) => o.value === value.kind);
  if (!option) {
    return out.push({ path: pointer(path, 'kind'), message: `must be one of ${p.options.map((o) => JSON.stringify(o.value)).join(', ')}` });
  }
  checkFields(option.properties, value, path, out, ['kind']);
}

function checkStrictObject(value: Json, path: string, out: Problem[], fields: Record<string, boolean>) {
  if (!isObject(value)) return out.push({ path, message: 'must be an object' });
  for (const key of Object.keys(value)) {
    if (!(key in fields)) out.push({ path: pointer(path, key), message: 'is not a field of this input' });
  }
  for (const [key, required] of Object.entries(fields)) {
    const field = value[key];
    if (isMissing(field)) {
      if (required) out.push({ path: pointer(path, key), message: 'is required' });
    } else if (typeof field !== 'string' || field.length === 0) {
      out.push({ path: pointer(path, key), message: 'must be a non-empty string' });
    }
  }
}

/**
 * A reference input holds a reference value naming the property's output; which instance it names (its
 * module type, its environment) is the module instance's service's to check.
 */
function checkReference(p: InputPropertyOf<'reference'>, value: Json, path: string, out: Problem[]) {
  if (!isReferenceValue(value))
    return out.push({ path, message: `must be a reference {"${REFERENCE_KEY}": {"instance": ..., "output": ${JSON.stringify(p.output)}}}` });
  const ref = value[REFERENCE_KEY];
  if (isObject(ref) && typeof ref.output === 'string' && ref.output !== p.output) {
    out.push({ path: `${path}/${REFERENCE_KEY}/output`, message: `must be ${JSON.stringify(p.output)}` });
  }
}

function check(p: InputProperty, value: Json, path: string, out: Problem[]): void {
  // A reference value stands for another instance's output, whose value is known only at deploy time.
  if (p.type !== 'reference' && isReferenceValue(value)) return;
  switch (p.type) {
    case 'string':
    case 'text':
      return void checkString(p, value, path, out);
    case 'number':
      return void checkNumber(p, value, path, out);
    case 'boolean':
      if (typeof value !== 'boolean') out.push({ path, message: 'must be a boolean' });
      return;
    case 'array':
      if (!Array.isArray(value)) return void out.push({ path, message: 'must be an array' });
      checkCount(value.length, p, path, out);
      value.forEach((item, i) =>
        isMissing(item) ? out.push({ path: pointer(path, i), message: 'must not be null' }) : check(p.items, item, pointer(path, i), out),
      );
      return;
    case 'string_array':
      return void checkStringArray(p, value, path, out);
    case 'object':
    case 'section':
      if (!isObject(value)) return void out.push({ path, message: 'must be an object' });
      checkFields(p.properties, value, path, out);
      return;
    case 'object_array':
      if (!Array.isArray(value)) return void out.push({ path, message: 'must be an array of objects' });
      checkCount(value.length, p, path, out);
      value.forEach((item, i) =>
        isObject(item) ? checkFields(p.properties, item, pointer(path, i), out) : out.push({ path: pointer(path, i), message: 'must be an object' }),
      );
      return;
    case 'object_map':
    case 'key_value':
      return void checkMap(p, value, path, out);
    case 'compound':
      return void checkCompound(p, value, path, out);
    case 'reference':
      checkReference(p, value, path, out);
      return;
    case 'git_repository':
      return void checkStrictObject(value, path, out, { code_source_id: true, repository: true, ref: p.require_ref === true, path: false });
  }
}

/**
 * validateValue checks a value against an InputProperty and returns every problem, each with the JSON
 * Pointer of the offending part of the value. A missing value (undefined, null, or "" for a text input)
 * is a problem only when the property is required; defaults are not applied here.
 */
export function validateValue(property: InputProperty, value: Json): Problem[] {
  const out: Problem[] = [];
  if (isMissingFor(property, value)) return property.required ? [{ path: '', message: 'is required' }] : [];
  check(property, value, '', out);
  return out;
}

/**
 * validateInputs checks a set of input values (an object keyed by input id, e.g. a module instance's
 * inputs) against a list of InputProperty, as the fields of one object: unknown ids, required inputs
 * that are shown, and every value. Paths start at the input id (`/subnets/2`).
 */
export function validateInputs(properties: InputProperty[], values: Record<string, Json>): Problem[] {
  const out: Problem[] = [];
  checkFields(properties, values, '', out);
  return out;
}

/** formatProblems renders problems as `<prefix><path>: <message>` lines for ErrorBody details. */
export function formatProblems(problems: Problem[], prefix: string): string[] {
  return problems.map((p) => `${prefix}${p.path}: ${p.message}`);
}
