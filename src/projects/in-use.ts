import { ConflictError } from '../platform/errors.ts';

/** One thing that still uses a resource: its kind (plural, e.g. `environments`) and a readable reference. */
export interface UsageRow {
  kind: string;
  ref: string;
}

/**
 * inUseError is the 409 for deleting something others still use. It names them: `details` lists
 * `<kind>: <ref>, …` per kind (repositories fetch one more than `sample`, so "and more" is honest).
 */
export function inUseError(entity: string, label: string, usages: UsageRow[], sample = 10): ConflictError {
  const byKind = new Map<string, string[]>();
  for (const { kind, ref } of usages) byKind.set(kind, [...(byKind.get(kind) ?? []), ref]);
  const items = [...byKind].map(([kind, refs]) => `${kind}: ${refs.slice(0, sample).join(', ')}${refs.length > sample ? ', and more' : ''}`);
  return new ConflictError(entity, 'IN_USE', `${label} is still used by ${[...byKind.keys()].join(' and ')}; delete or move them first`, {
    details: [{ title: 'Used by', render: 'list', items }],
  });
}
