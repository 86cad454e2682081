// What hangs off a row of another domain. A domain that references another one imports it (an
// environment checks its project exists), so the referenced domain cannot import it back to ask what
// still uses a row it is deleting: that would be an import cycle. Instead the referencing domain's repo
// registers here, for each kind of row it points at, how to find its rows that use one (a delete is
// refused with a 409 naming them) and which of its rows go with it. The referenced domain's service
// asks through findUsages and deleteDependents, inside the transaction that holds the row's lock.

import type { Executor } from './db.ts';
import { ConflictError, type ApiEntityWith } from '../errors.ts';

/** The kinds of rows others point at. */
export type Referenced =
  | 'Project'
  | 'Environment'
  | 'CloudAccount'
  | 'ExecutionEnvironment'
  | 'Pipeline'
  | 'CodeSource'
  | 'GitSelfHostedServer'
  | 'GitAppInstallation'
  | 'Stack'
  | 'ModuleDefinition';

/** One thing that still uses a resource: its kind (plural, e.g. `environments`) and a readable reference. */
export interface UsageRow {
  kind: string;
  ref: string;
}

export interface Dependent {
  /** Up to `sample + 1` rows using the referenced row (one more than shown, so "and more" is honest). */
  findUsages?: (db: Executor, id: string, sample: number) => Promise<UsageRow[]>;
  /** Deletes the rows that go with the referenced row (nothing else refers to them). */
  deleteWith?: (db: Executor, id: string) => Promise<unknown>;
}

const dependents = new Map<Referenced, Dependent[]>();

/** registerDependent is called once per dependent, at the top level of the referencing domain's repo. */
export function registerDependent(of: Referenced, dependent: Dependent): void {
  dependents.set(of, [...(dependents.get(of) ?? []), dependent]);
}

/** findUsages asks every registered dependent what still uses row `id` of kind `of`. */
export async function findUsages(db: Executor, of: Referenced, id: string, sample = 10): Promise<UsageRow[]> {
  const usages: UsageRow[] = [];
  for (const d of dependents.get(of) ?? []) if (d.findUsages) usages.push(...(await d.findUsages(db, id, sample)));
  return usages;
}

/** deleteDependents deletes, in the caller's transaction, the rows that go with row `id` of kind `of`. */
export async function deleteDependents(db: Executor, of: Referenced, id: string): Promise<void> {
  for (const d of dependents.get(of) ?? []) if (d.deleteWith) await d.deleteWith(db, id);
}

/**
 * inUseError is the 409 for deleting something others still use. It names them: `details` lists
 * `<kind>: <ref>, …` per kind (finders fetch one more than `sample`, so "and more" is honest).
 */
export function inUseError(entity: ApiEntityWith<'IN_USE'>, label: string, usages: UsageRow[], sample = 10): ConflictError {
  const byKind = new Map<string, string[]>();
  for (const { kind, ref } of usages) byKind.set(kind, [...(byKind.get(kind) ?? []), ref]);
  const items = [...byKind].map(([kind, refs]) => `${kind}: ${refs.slice(0, sample).join(', ')}${refs.length > sample ? ', and more' : ''}`);
  return new ConflictError(entity, 'IN_USE', `${label} is still used by ${[...byKind.keys()].join(' and ')}; delete or move them first`, {
    details: [{ title: 'Used by', render: 'list', items }],
  });
}
