import { DEFAULT_VALUE_REF_KEY, type InputProperty } from './inputs.schema.ts';
import { patternProblem } from './patterns.ts';
import { validateValue, type Problem } from './validate-value.ts';

/** Deeper nesting than this is refused: it only ever comes from a generated or hostile schema. */
export const MAX_DEPTH = 8;

type Patterns = { pattern: string; message: string }[] | undefined;

function checkPatternList(patterns: Patterns, path: string, out: Problem[]) {
  patterns?.forEach(({ pattern }, i) => {
    const problem = patternProblem(pattern);
    if (problem) out.push({ path: `${path}/${i}/pattern`, message: problem });
  });
}

function checkRange(min: number | undefined, max: number | undefined, names: [string, string], path: string, out: Problem[]) {
  if (min !== undefined && max !== undefined && min > max) out.push({ path: `${path}/${names[0]}`, message: `must not be greater than ${names[1]}` });
}

function checkUnique(values: string[], path: (i: number) => string, what: string, out: Problem[]) {
  const seen = new Set<string>();
  values.forEach((v, i) => {
    if (seen.has(v)) out.push({ path: path(i), message: `duplicate ${what} ${JSON.stringify(v)}` });
    seen.add(v);
  });
}

/** Sibling inputs: ids are unique and every show_when names a sibling. */
function checkChildren(children: InputProperty[], path: string, depth: number, out: Problem[], extraIds: string[] = []) {
  checkUnique(
    children.map((c) => c.id),
    (i) => `${path}/${i}/id`,
    'input id',
    out,
  );
  const ids = new Set([...children.map((c) => c.id), ...extraIds]);
  children.forEach((child, i) => {
    for (const key of Object.keys(child.show_when ?? {})) {
      if (!ids.has(key) || key === child.id) out.push({ path: `${path}/${i}/show_when/${key}`, message: 'does not name a sibling input' });
    }
    walk(child, `${path}/${i}`, depth + 1, out);
  });
}

function isDefaultValueRef(value: unknown): boolean {
  return typeof value === 'object' && value !== null && DEFAULT_VALUE_REF_KEY in value;
}

function walk(p: InputProperty, path: string, depth: number, out: Problem[]) {
  if (depth > MAX_DEPTH) {
    out.push({ path, message: `nests deeper than ${MAX_DEPTH} levels` });
    return;
  }
  const any = p as Partial<Record<string, unknown>> & InputProperty;
  checkPatternList(any.patterns as Patterns, `${path}/patterns`, out);
  checkPatternList(any.key_patterns as Patterns, `${path}/key_patterns`, out);
  checkPatternList(any.value_patterns as Patterns, `${path}/value_patterns`, out);
  checkRange(any.min_items as number | undefined, any.max_items as number | undefined, ['min_items', 'max_items'], path, out);
  if (p.type === 'number') {
    checkRange(p.min, p.max, ['min', 'max'], path, out);
    if (p.step !== undefined && p.step <= 0) out.push({ path: `${path}/step`, message: 'must be greater than 0' });
  }
  if (p.type === 'text') checkRange(p.min_length, p.max_length, ['min_length', 'max_length'], path, out);
  if (p.type === 'string' || p.type === 'string_array') {
    checkUnique(
      (p.values ?? []).map((o) => o.value),
      (i) => `${path}/values/${i}/value`,
      'option value',
      out,
    );
  }
  switch (p.type) {
    case 'array':
      walk(p.items, `${path}/items`, depth + 1, out);
      break;
    case 'object':
    case 'section':
    case 'object_map':
    case 'object_array':
      checkChildren(p.properties, `${path}/properties`, depth, out);
      break;
    case 'compound':
      checkUnique(
        p.options.map((o) => o.value),
        (i) => `${path}/options/${i}/value`,
        'option value',
        out,
      );
      p.options.forEach((o, i) => {
        if (o.properties.some((c) => c.id === 'kind')) out.push({ path: `${path}/options/${i}/properties`, message: '"kind" is reserved for the choice' });
        checkChildren(o.properties, `${path}/options/${i}/properties`, depth, out, ['kind']);
      });
      break;
  }
  // A literal default is checked only once the shape itself is sound, so its problems are meaningful.
  if (out.length === 0 && p.default !== undefined && !isDefaultValueRef(p.default)) {
    for (const problem of validateValue({ ...p, required: false } as InputProperty, p.default)) {
      out.push({ path: `${path}/default${problem.path}`, message: problem.message });
    }
  }
}

/**
 * checkInputProperty finds what a well-typed InputProperty still gets wrong: patterns RE2 cannot
 * compile or that are too large, inverted ranges, duplicate ids or options, show_when naming no sibling, too deep nesting,
 * and a literal default that its own property refuses. Paths are JSON Pointers into the property.
 */
export function checkInputProperty(property: InputProperty): Problem[] {
  const out: Problem[] = [];
  walk(property, '', 0, out);
  return out;
}

/** checkInputProperties checks a list of sibling inputs (a module version's inputs): each one, unique ids, show_when. */
export function checkInputProperties(properties: InputProperty[]): Problem[] {
  const out: Problem[] = [];
  checkChildren(properties, '', 0, out);
  return out;
}

/** defaultValueRefsOf lists the definition givenIds that defaults inside the property refer to. */
export function defaultValueRefsOf(property: InputProperty): string[] {
  const found: string[] = [];
  const visit = (p: InputProperty) => {
    if (isDefaultValueRef(p.default)) found.push((p.default as Record<string, string>)[DEFAULT_VALUE_REF_KEY]);
    if (p.type === 'array') visit(p.items);
    if ('properties' in p) p.properties.forEach(visit);
    if (p.type === 'compound') p.options.forEach((o) => o.properties.forEach(visit));
  };
  visit(property);
  return found;
}
