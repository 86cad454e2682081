// Reading OpenTofu's machine-readable output: the JSON plan representation of `show -json <plan>` and
// the outputs of `output -json` (https://opentofu.org/docs/internals/json-format/).

export interface PlanSummary {
  add: number;
  change: number;
  destroy: number;
  /** Addresses of the resources the plan creates, updates, replaces or deletes. */
  changedAddresses: string[];
  /** What the plan does to each of those resources, and to which of their attributes. */
  resourceChanges: PlannedChange[];
  /** Present (true) when the plan changes more than the attributes kept here: resourceChanges past the budget have none. */
  attributesTruncated?: true;
  /** Whether applying it would change anything (resources or outputs). */
  hasChanges: boolean;
}

export type PlannedAction = 'create' | 'update' | 'delete' | 'replace';

export interface PlannedChange {
  address: string;
  action: PlannedAction;
  /** The resource's top-level attributes that change (none listed for a delete), values as JSON text. */
  attributes?: PlannedAttribute[];
}

export interface PlannedAttribute {
  name: string;
  /** Absent when the attribute had no value; SENSITIVE_VALUE or UNKNOWN_VALUE in place of a value not to be shown or not yet known. */
  before?: string;
  after?: string;
}

/** A value OpenTofu marks sensitive, or that holds one of the stack's sensitive values. */
export const SENSITIVE_VALUE = '(sensitive)';
/** A value only the apply will know. */
export const UNKNOWN_VALUE = '(known after apply)';
/** A value is cut to this many characters (an ellipsis marks the cut). */
const MAX_VALUE_CHARS = 300;
/** Attribute values kept in all, in characters: a plan's summary is stored with its step and read on every page of it. */
const ATTRIBUTE_BUDGET_CHARS = 256 * 1024;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * summarizePlan counts a plan's actions as `tofu plan` prints them (a replacement adds one and destroys
 * one) and lists what changes, attribute by attribute, with a value shown as SENSITIVE_VALUE when OpenTofu
 * marks it sensitive or it holds one of `secrets` (the pieces of the stack's sensitive values).
 */
export function summarizePlan(plan: unknown, secrets: string[] = []): PlanSummary | undefined {
  if (!isObject(plan)) return undefined;
  const changes = Array.isArray(plan.resource_changes) ? plan.resource_changes : [];
  const summary: PlanSummary = { add: 0, change: 0, destroy: 0, changedAddresses: [], resourceChanges: [], hasChanges: false };
  let budget = ATTRIBUTE_BUDGET_CHARS;
  for (const rc of changes) {
    if (!isObject(rc) || !isObject(rc.change) || !Array.isArray(rc.change.actions)) return undefined;
    const actions = rc.change.actions.map(String);
    const creates = actions.includes('create');
    const deletes = actions.includes('delete');
    if (creates) summary.add++;
    if (deletes) summary.destroy++;
    if (actions.includes('update')) summary.change++;
    if (!(creates || deletes || actions.includes('update')) || typeof rc.address !== 'string') continue;
    summary.changedAddresses.push(rc.address);
    const action: PlannedAction = creates && deletes ? 'replace' : creates ? 'create' : deletes ? 'delete' : 'update';
    const change: PlannedChange = { address: rc.address, action };
    if (action !== 'delete') {
      const attributes = changedAttributes(rc.change, secrets);
      const size = attributes.reduce((sum, a) => sum + a.name.length + (a.before?.length ?? 0) + (a.after?.length ?? 0), 0);
      if (size <= budget) {
        change.attributes = attributes;
        budget -= size;
      } else summary.attributesTruncated = true;
    }
    summary.resourceChanges.push(change);
  }
  const outputChanges = isObject(plan.output_changes) ? Object.values(plan.output_changes) : [];
  const outputsChange = outputChanges.some((oc) => isObject(oc) && Array.isArray(oc.actions) && oc.actions.some((a) => a !== 'no-op'));
  summary.hasChanges = summary.add + summary.change + summary.destroy > 0 || outputsChange;
  return summary;
}

/** The top-level attributes a resource change alters, as PlannedAttribute, in the order of their names. */
function changedAttributes(change: Record<string, unknown>, secrets: string[]): PlannedAttribute[] {
  const before = isObject(change.before) ? change.before : {};
  const after = isObject(change.after) ? change.after : {};
  const marks = (name: string, key: string) => (isObject(change[key]) ? (change[key] as Record<string, unknown>)[name] : undefined);
  const attributes: PlannedAttribute[] = [];
  // An attribute only the apply will know may be in after_unknown alone.
  const unknowns = isObject(change.after_unknown) ? Object.keys(change.after_unknown) : [];
  for (const name of [...new Set([...Object.keys(before), ...Object.keys(after), ...unknowns])].sort()) {
    const unknown = marksAny(marks(name, 'after_unknown'));
    if (!unknown && JSON.stringify(before[name]) === JSON.stringify(after[name])) continue;
    const attribute: PlannedAttribute = { name };
    // Either side sensitive hides both: a rotated secret's old value must not show beside its masked new one.
    const sensitive =
      marksAny(marks(name, 'before_sensitive')) ||
      marksAny(marks(name, 'after_sensitive')) ||
      holdsSecret(before[name], secrets) ||
      holdsSecret(after[name], secrets);
    const shownBefore = shownValue(before[name], sensitive);
    const shownAfter = unknown ? UNKNOWN_VALUE : shownValue(after[name], sensitive);
    if (shownBefore !== undefined) attribute.before = shownBefore;
    if (shownAfter !== undefined) attribute.after = shownAfter;
    attributes.push(attribute);
  }
  return attributes;
}

/** Whether a sensitivity or unknown-ness marking (true, or an object or array holding true somewhere) marks anything. */
function marksAny(marking: unknown): boolean {
  if (marking === true) return true;
  if (Array.isArray(marking)) return marking.some(marksAny);
  return isObject(marking) && Object.values(marking).some(marksAny);
}

/** A value as JSON text to show (cut at MAX_VALUE_CHARS), SENSITIVE_VALUE in its place, or undefined for no value. */
export function shownValue(value: unknown, sensitive: boolean): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (sensitive) return SENSITIVE_VALUE;
  const text = JSON.stringify(value);
  if (text.length <= MAX_VALUE_CHARS) return text;
  // Never cut between the two halves of a surrogate pair: a lone half is not text.
  const cut = /[\uD800-\uDBFF]$/.test(text.slice(0, MAX_VALUE_CHARS)) ? MAX_VALUE_CHARS - 1 : MAX_VALUE_CHARS;
  return `${text.slice(0, cut)}…`;
}

/** What a sensitive output reads as in the stack's `output`, as `tofu output` prints it. */
export const SENSITIVE_OUTPUT = '(sensitive value)';

/** Whether a value, as JSON, holds one of the secrets as it is or JSON-escaped (a secret inside a longer string, a list, a map). */
function holdsSecret(value: unknown, secrets: string[]): boolean {
  const text = JSON.stringify(value ?? null);
  return secrets.some((secret) => text.includes(secret) || text.includes(JSON.stringify(secret).slice(1, -1)));
}

/**
 * stackOutputs turns `output -json` into the stack's `output`: name → value. An output reads as
 * SENSITIVE_OUTPUT when OpenTofu marks it sensitive, or when its value holds one of `secrets` (the pieces
 * of the stack's sensitive values the log masks: each value, each line of one, each string inside a JSON
 * one): an output computed from a sensitive input is not shown in clear.
 */
export function stackOutputs(outputs: unknown, secrets: string[] = []): Record<string, unknown> | undefined {
  if (!isObject(outputs)) return undefined;
  const result: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(outputs)) {
    if (!isObject(o)) return undefined;
    result[name] = o.sensitive === true || holdsSecret(o.value, secrets) ? SENSITIVE_OUTPUT : (o.value ?? null);
  }
  return result;
}
