// Reading OpenTofu's machine-readable output: the JSON plan representation of `show -json <plan>` and
// the outputs of `output -json` (https://opentofu.org/docs/internals/json-format/).

export interface PlanSummary {
  add: number;
  change: number;
  destroy: number;
  /** Addresses of the resources the plan creates, updates, replaces or deletes. */
  changedAddresses: string[];
  /** Whether applying it would change anything (resources or outputs). */
  hasChanges: boolean;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** summarizePlan counts a plan's actions as `tofu plan` prints them: a replacement adds one and destroys one. */
export function summarizePlan(plan: unknown): PlanSummary | undefined {
  if (!isObject(plan)) return undefined;
  const changes = Array.isArray(plan.resource_changes) ? plan.resource_changes : [];
  const summary: PlanSummary = { add: 0, change: 0, destroy: 0, changedAddresses: [], hasChanges: false };
  for (const rc of changes) {
    if (!isObject(rc) || !isObject(rc.change) || !Array.isArray(rc.change.actions)) return undefined;
    const actions = rc.change.actions.map(String);
    const creates = actions.includes('create');
    const deletes = actions.includes('delete');
    if (creates) summary.add++;
    if (deletes) summary.destroy++;
    if (actions.includes('update')) summary.change++;
    if ((creates || deletes || actions.includes('update')) && typeof rc.address === 'string') summary.changedAddresses.push(rc.address);
  }
  const outputChanges = isObject(plan.output_changes) ? Object.values(plan.output_changes) : [];
  const outputsChange = outputChanges.some((oc) => isObject(oc) && Array.isArray(oc.actions) && oc.actions.some((a) => a !== 'no-op'));
  summary.hasChanges = summary.add + summary.change + summary.destroy > 0 || outputsChange;
  return summary;
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
