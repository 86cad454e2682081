// The inputs of a module instance, evaluated against its version's InputProperty list: what is kept,
// what each input resolves to and from where, and every problem at once (docs/modules.md#inputs).

import { DEFAULT_VALUE_REF_KEY, type InputProperty } from '../inputs/inputs.schema.ts';
import { findReferences, isReferenceValue, type FoundReference } from '../inputs/references.ts';
import { isShown, validateInputs, type Problem } from '../inputs/validate-value.ts';
import type { ResolvedDefaultValue } from '../default-values/default-values.schema.ts';

/** Where an input's value came from. */
export const INPUT_SOURCES = ['VALUE', 'DEFAULT', 'ENVIRONMENT', 'PROJECT', 'ORGANIZATION', 'DEFINITION'] as const;
export type InputSource = (typeof INPUT_SOURCES)[number];

export interface ResolvedInput {
  id: string;
  label: string;
  /** Absent when the input has no value (optional and unset, or hidden). */
  value?: unknown;
  source: {
    type: InputSource;
    defaultValueDefinitionId?: string;
    parentId?: string;
    defaultValueId?: string;
  };
  /** A show_when condition hides it: it is neither required nor kept. */
  hidden?: boolean;
}

/** More reference values than this in one instance's inputs are refused: no module consumes that many outputs. */
export const MAX_REFERENCES = 500;

/** What a response shows for the value of a sensitive input. */
export const SENSITIVE_VALUE = '(sensitive)';

export interface InputEvaluation {
  /** The values to store: as written, minus those of hidden and sensitive inputs. */
  kept: Record<string, unknown>;
  /** Values given for sensitive inputs, to seal as the stack's sensitive variables (never stored in the clear). */
  secrets: Record<string, unknown>;
  /** Sensitive inputs given `null`: their sealed value is to be removed. */
  cleared: string[];
  /** The values a deploy uses: kept plus the defaults of inputs without one (reference values left in place). */
  effective: Record<string, unknown>;
  resolved: ResolvedInput[];
  references: FoundReference[];
  /** `/data/values/<id>… (<label>): <message>` lines, every one of the request. */
  problems: string[];
}

export interface EvaluationContext {
  inputs: InputProperty[];
  values: Record<string, unknown>;
  /** The effective default value of a default-value definition (by givenId) for the instance's environment. */
  resolveDefaultValue: (givenId: string) => Promise<ResolvedDefaultValue | undefined>;
  /** Sensitive inputs that hold a sealed value already: left out of the values, they keep it. */
  sealed?: ReadonlySet<string>;
}

/** An input whose values are secrets: a `key_value` input marked `sensitive`. */
export function isSensitiveInput(input: InputProperty): boolean {
  return input.type === 'key_value' && input.sensitive === true;
}

function isMissing(input: InputProperty, value: unknown): boolean {
  return value === undefined || value === null || (value === '' && (input.type === 'string' || input.type === 'text'));
}

async function defaultOf(input: InputProperty, ctx: EvaluationContext): Promise<Pick<ResolvedInput, 'value' | 'source'> | undefined> {
  const d = input.default as unknown;
  if (d === undefined) return undefined;
  if (typeof d === 'object' && d !== null && DEFAULT_VALUE_REF_KEY in d) {
    const resolved = await ctx.resolveDefaultValue((d as Record<string, string>)[DEFAULT_VALUE_REF_KEY]);
    if (!resolved) return undefined;
    const { type, parentId, defaultValueId } = resolved.source;
    return {
      value: resolved.value,
      source: {
        type,
        defaultValueDefinitionId: resolved.defaultValueDefinitionId,
        ...(parentId ? { parentId } : {}),
        ...(defaultValueId ? { defaultValueId } : {}),
      },
    };
  }
  return { value: d, source: { type: 'DEFAULT' } };
}

/** The value the last apply deployed for an input: under its id, else under an id it was moved from. */
export function appliedValueOf(input: InputProperty, applied: Record<string, unknown>): unknown {
  if (applied[input.id] !== undefined) return applied[input.id];
  for (const old of input.moved_from ?? []) if (applied[old] !== undefined) return applied[old];
  return undefined;
}

/**
 * carryOver maps an instance's values onto another version's inputs: an input keeps its value, or takes
 * that of the first input it was moved from (a rename, or a merge of several) that has one. Values of
 * inputs the version no longer has are dropped.
 */
export function carryOver(values: Record<string, unknown>, inputs: InputProperty[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const input of inputs) {
    const from = [input.id, ...(input.moved_from ?? [])].find((id) => values[id] !== undefined);
    if (from !== undefined) out[input.id] = values[from];
  }
  return out;
}

/** JSON with object keys sorted, so two equal values compare equal whatever order their keys came in (jsonb reorders them). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

/** The rules that compare with what is deployed: `immutable` and `min_current_value`, for one input. */
function deployedRuleProblems(input: InputProperty, value: unknown, applied: Record<string, unknown>): string[] {
  const current = appliedValueOf(input, applied);
  if (current === undefined) return [];
  if (input.immutable && (value === undefined || canonicalJson(value) !== canonicalJson(current))) {
    return [`is immutable once deployed: it must stay ${JSON.stringify(current)}`];
  }
  const minCurrent = 'min_current_value' in input && input.min_current_value;
  if (minCurrent && typeof value === 'number' && typeof current === 'number' && value < current) {
    return [`must not go below the deployed value ${current}`];
  }
  return [];
}

/**
 * deployedValueProblems checks the values a deploy would now deploy (the stack's variables: references
 * naming producers by id, as deployed values do) against what the instance last deployed. An immutable
 * input that was deployed must still be given the same value: left out or hidden now, it is a problem.
 */
export function deployedValueProblems(inputs: InputProperty[], values: Record<string, unknown>, applied: Record<string, unknown>): string[] {
  const format = formatFor(inputs);
  return inputs
    .filter((input) => !isSensitiveInput(input))
    .flatMap((input) => deployedRuleProblems(input, values[input.id], applied).map((message) => format({ path: `/${input.id}`, message })));
}

function formatFor(inputs: InputProperty[]) {
  const labels = new Map(inputs.map((i) => [i.id, i.label]));
  return (problem: Problem): string => {
    const id = problem.path.split('/')[1]?.replace(/~1/g, '/').replace(/~0/g, '~') ?? '';
    const label = labels.get(id);
    return `/data/values${problem.path}${label ? ` (${label})` : ''}: ${problem.message}`;
  };
}

/** evaluateInputs checks a set of values against a version's inputs and resolves what deploys would use. */
export async function evaluateInputs(ctx: EvaluationContext): Promise<InputEvaluation> {
  const sensitive = new Set(ctx.inputs.filter(isSensitiveInput).map((i) => i.id));
  const secrets = Object.fromEntries(
    Object.entries(ctx.values).filter(([id, v]) => sensitive.has(id) && v !== null && v !== undefined && !isReferenceValue(v)),
  );
  const cleared = [...sensitive].filter((id) => ctx.values[id] === null);
  const keepsSealed = (id: string) => ctx.values[id] === undefined && ctx.sealed?.has(id) === true;
  const { references, problems: referenceProblems } = findReferences(ctx.values);
  const effective: Record<string, unknown> = {};
  const sources = new Map<string, ResolvedInput['source']>();
  for (const input of ctx.inputs) {
    const given = ctx.values[input.id];
    if (!isMissing(input, given) || keepsSealed(input.id)) {
      if (!keepsSealed(input.id)) effective[input.id] = given;
      sources.set(input.id, { type: 'VALUE' });
      continue;
    }
    const fallback = await defaultOf(input, ctx);
    if (fallback) {
      effective[input.id] = fallback.value;
      sources.set(input.id, fallback.source);
    }
  }
  // Unknown ids stay in, so the validator names them.
  for (const [id, value] of Object.entries(ctx.values)) if (!(id in effective) && !ctx.inputs.some((i) => i.id === id)) effective[id] = value;
  const hidden = new Set(ctx.inputs.filter((i) => !isShown(i, effective)).map((i) => i.id));
  for (const id of hidden) delete effective[id];
  // A sensitive input that keeps its sealed value is not missing: only what is written is checked.
  const checked = ctx.inputs.map((i) => (keepsSealed(i.id) ? ({ ...i, required: false } as InputProperty) : i));
  const problems: Problem[] = [...referenceProblems, ...validateInputs(checked, effective)];
  if (references.length > MAX_REFERENCES) problems.push({ path: '', message: `holds ${references.length} reference values: at most ${MAX_REFERENCES}` });
  const isSecret = (id: string) => id in secrets || keepsSealed(id);
  const kept = Object.fromEntries(Object.entries(ctx.values).filter(([id, v]) => !hidden.has(id) && v !== undefined && !sensitive.has(id)));
  for (const id of Object.keys(secrets)) delete effective[id];
  const resolved = ctx.inputs.map<ResolvedInput>((input) => ({
    id: input.id,
    label: input.label,
    ...(isSecret(input.id) && !hidden.has(input.id) ? { value: SENSITIVE_VALUE } : effective[input.id] !== undefined ? { value: effective[input.id] } : {}),
    source: sources.get(input.id) ?? { type: 'VALUE' },
    ...(hidden.has(input.id) ? { hidden: true } : {}),
  }));
  return {
    kept: { ...kept, ...Object.fromEntries(Object.entries(ctx.values).filter(([id, v]) => sensitive.has(id) && isReferenceValue(v) && !hidden.has(id))) },
    secrets: Object.fromEntries(Object.entries(secrets).filter(([id]) => !hidden.has(id))),
    cleared,
    effective,
    resolved,
    references: references.filter((r) => !hidden.has(r.inputId)),
    problems: problems.map(formatFor(ctx.inputs)),
  };
}
