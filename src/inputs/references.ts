// Reference values: an input's value (or any part of it) may be `{"$ref": {"instance", "output", "path"?}}`,
// standing for an output of another module instance, read when that instance's consumer is deployed.
// docs/inputs.md#reference-values.

import type { Problem } from './validate-value.ts';

export const REFERENCE_KEY = '$ref';

export interface ReferenceTarget {
  /** The producing instance: its id, or its givenId in the consumer's environment. */
  instance: string;
  /** The output of the producer. */
  output: string;
  /** A JSON Pointer into the output's value ('' for all of it). */
  path: string;
}

/** One reference value found in a set of inputs: where it is and what it names. */
export interface FoundReference {
  /** The top-level input holding it. */
  inputId: string;
  /** Its JSON Pointer within the inputs (`/subnets/0`). */
  inputPath: string;
  target: ReferenceTarget;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** isReferenceValue: an object whose only key is `$ref` (whether or not what it holds is well formed). */
export function isReferenceValue(value: unknown): value is { [REFERENCE_KEY]: unknown } {
  return isObject(value) && REFERENCE_KEY in value && Object.keys(value).length === 1;
}

const POINTER = /^(\/([^~/]|~[01])*)*$/;

function targetOf(value: { [REFERENCE_KEY]: unknown }, at: string, problems: Problem[]): ReferenceTarget | undefined {
  const ref = value[REFERENCE_KEY];
  if (!isObject(ref)) return void problems.push({ path: at, message: '$ref must be an object {instance, output, path?}' });
  const unknown = Object.keys(ref).filter((k) => !['instance', 'output', 'path'].includes(k));
  const before = problems.length;
  for (const key of unknown) problems.push({ path: `${at}/$ref/${key}`, message: 'is not a field of a reference' });
  for (const key of ['instance', 'output'] as const) {
    const field = ref[key];
    if (typeof field !== 'string' || field.length === 0 || field.length > 255)
      problems.push({ path: `${at}/$ref/${key}`, message: 'must be a non-empty string' });
  }
  const path = ref.path ?? '';
  if (typeof path !== 'string' || path.length > 1024 || !POINTER.test(path)) {
    problems.push({ path: `${at}/$ref/path`, message: 'must be a JSON Pointer such as /0/id' });
  }
  if (problems.length > before) return undefined;
  return { instance: ref.instance as string, output: ref.output as string, path: path as string };
}

/** Deeper than this a value is not walked for references (the request's own depth limit is lower). */
const MAX_DEPTH = 64;

/**
 * findReferences lists every reference value in a set of inputs (an object keyed by input id), and the
 * problems of malformed ones. A reference is not looked into: its `$ref` is not a value.
 */
export function findReferences(values: Record<string, unknown>): { references: FoundReference[]; problems: Problem[] } {
  const references: FoundReference[] = [];
  const problems: Problem[] = [];
  const walk = (value: unknown, inputId: string, at: string, depth: number) => {
    if (depth > MAX_DEPTH) return;
    if (isReferenceValue(value)) {
      const target = targetOf(value, at, problems);
      if (target) references.push({ inputId, inputPath: at, target });
      return;
    }
    if (Array.isArray(value)) value.forEach((item, i) => walk(item, inputId, `${at}/${i}`, depth + 1));
    else if (isObject(value)) for (const [key, item] of Object.entries(value)) walk(item, inputId, `${at}/${escapePointerKey(key)}`, depth + 1);
  };
  for (const [inputId, value] of Object.entries(values)) walk(value, inputId, `/${escapePointerKey(inputId)}`, 0);
  return { references, problems };
}

function escapePointerKey(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** readPointer reads a JSON Pointer out of a value; undefined when it leads nowhere. */
export function readPointer(value: unknown, pointer: string): unknown {
  if (pointer === '') return value;
  let current = value;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(current) && /^(0|[1-9]\d*)$/.test(key)) current = current[Number(key)];
    else if (isObject(current) && Object.hasOwn(current, key)) current = current[key];
    else return undefined;
  }
  return current;
}

/** replaceReferences copies a value, each reference value replaced by what `resolve` answers for it. */
export function replaceReferences(value: unknown, resolve: (target: ReferenceTarget) => unknown, depth = 0): unknown {
  if (depth > MAX_DEPTH) return value;
  if (isReferenceValue(value)) {
    const target = targetOf(value, '', []);
    return target ? resolve(target) : value;
  }
  if (Array.isArray(value)) return value.map((item) => replaceReferences(item, resolve, depth + 1));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceReferences(v, resolve, depth + 1)]));
  return value;
}
