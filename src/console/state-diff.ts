// What changed between two versions of a stack's state (OpenTofu's state format, version 4): the
// resource instances added and removed, and for those in both, the top-level attributes that differ.
// A value the state marks sensitive is never shown.

import { type PlannedAttribute, shownValue } from '../opentofu/tofu-json.ts';

export interface StateResourceDiff {
  address: string;
  change: 'added' | 'removed' | 'changed';
  /** For a changed instance: each attribute that differs, before and after as JSON text. */
  attributes?: PlannedAttribute[];
}

interface Instance {
  attributes: Record<string, unknown>;
  /** Top-level attributes the state marks sensitive. */
  sensitive: Set<string>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** diffStates lists, in address order, every resource instance that differs between `from` and `to`. */
export function diffStates(from: unknown, to: unknown): StateResourceDiff[] {
  const before = instancesOf(from);
  const after = instancesOf(to);
  const diffs: StateResourceDiff[] = [];
  for (const address of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const a = before.get(address);
    const b = after.get(address);
    if (!a) diffs.push({ address, change: 'added' });
    else if (!b) diffs.push({ address, change: 'removed' });
    else {
      const attributes = changedAttributes(a, b);
      if (attributes.length) diffs.push({ address, change: 'changed', attributes });
    }
  }
  return diffs;
}

function changedAttributes(a: Instance, b: Instance): PlannedAttribute[] {
  const changed: PlannedAttribute[] = [];
  for (const name of [...new Set([...Object.keys(a.attributes), ...Object.keys(b.attributes)])].sort()) {
    if (JSON.stringify(a.attributes[name]) === JSON.stringify(b.attributes[name])) continue;
    const attribute: PlannedAttribute = { name };
    const shownBefore = shownValue(a.attributes[name], a.sensitive.has(name) || b.sensitive.has(name));
    const shownAfter = shownValue(b.attributes[name], a.sensitive.has(name) || b.sensitive.has(name));
    if (shownBefore !== undefined) attribute.before = shownBefore;
    if (shownAfter !== undefined) attribute.after = shownAfter;
    changed.push(attribute);
  }
  return changed;
}

/** Every resource instance of a state, by its address as OpenTofu writes it (`module.m.aws_s3_bucket.b["k"]`). */
function instancesOf(state: unknown): Map<string, Instance> {
  const found = new Map<string, Instance>();
  const resources = isObject(state) && Array.isArray(state.resources) ? state.resources : [];
  for (const r of resources) {
    if (!isObject(r) || !Array.isArray(r.instances)) continue;
    const base = `${typeof r.module === 'string' ? `${r.module}.` : ''}${r.mode === 'data' ? 'data.' : ''}${r.type}.${r.name}`;
    for (const i of r.instances) {
      if (!isObject(i)) continue;
      const key = i.index_key === undefined ? '' : `[${JSON.stringify(i.index_key)}]`;
      found.set(base + key, { attributes: isObject(i.attributes) ? i.attributes : {}, sensitive: sensitiveNames(i.sensitive_attributes) });
    }
  }
  return found;
}

/** The top-level attribute each sensitive path starts with: paths are lists of steps like {type: 'get_attr', value: 'password'}. */
function sensitiveNames(paths: unknown): Set<string> {
  const names = new Set<string>();
  if (!Array.isArray(paths)) return names;
  for (const path of paths) {
    const first = Array.isArray(path) ? path[0] : undefined;
    if (isObject(first) && typeof first.value === 'string') names.add(first.value);
  }
  return names;
}
