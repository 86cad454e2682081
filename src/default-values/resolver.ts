import type { Executor } from '../platform/db/db.ts';
import { DEFAULT_VALUE_REF_KEY, type InputProperty } from '../inputs/inputs.schema.ts';
import { findDefinitionsByGivenIds, type DefinitionRow } from './default-value-definitions.repo.ts';
import { findValuesForScopes, type DefaultValueRow } from './default-values.repo.ts';
import type { ResolvedDefaultValue } from './default-values.schema.ts';

/** The scopes of an environment, nearest first: the environment, its project, its organization. */
export interface Scopes {
  organizationId: string;
  projectId: string;
  environmentId: string;
}

/** `$defaultValue` chains longer than this are treated as unresolved: they can only be a cycle or a mistake. */
const MAX_REFERENCE_HOPS = 8;

function nearest(values: DefaultValueRow[], scopes: Scopes): DefaultValueRow | undefined {
  for (const [type, parentId] of [
    ['ENVIRONMENT', scopes.environmentId],
    ['PROJECT', scopes.projectId],
    ['ORGANIZATION', scopes.organizationId],
  ] as const) {
    const hit = values.find((v) => v.parent_id === parentId && v.parent_type === type);
    if (hit) return hit;
  }
  return undefined;
}

function literalDefaultOf(schema: InputProperty): { value?: unknown; ref?: string } {
  const d = schema.default as unknown;
  if (d === undefined) return {};
  if (typeof d === 'object' && d !== null && DEFAULT_VALUE_REF_KEY in d) return { ref: (d as Record<string, string>)[DEFAULT_VALUE_REF_KEY] };
  return { value: d };
}

/**
 * resolveDefinitions returns the effective value of each definition for an environment: the value set
 * on the environment, else on its project, else on the organization, else the literal `default` of the
 * definition's schema (following a `$defaultValue` reference there). Definitions with none are left out.
 */
export async function resolveDefinitions(db: Executor, scopes: Scopes, definitions: DefinitionRow[]): Promise<ResolvedDefaultValue[]> {
  const scopeIds = [scopes.environmentId, scopes.projectId, scopes.organizationId];
  const values = await findValuesForScopes(
    db,
    scopes.organizationId,
    definitions.map((d) => d.id),
    scopeIds,
  );
  const resolved: ResolvedDefaultValue[] = [];
  for (const definition of definitions) {
    const hit = await resolveOne(db, scopes, definition, values, new Set());
    if (hit) resolved.push(hit);
  }
  return resolved;
}

async function resolveOne(
  db: Executor,
  scopes: Scopes,
  definition: DefinitionRow,
  values: DefaultValueRow[],
  seen: Set<string>,
): Promise<ResolvedDefaultValue | undefined> {
  const base = { defaultValueDefinitionId: definition.id, givenId: definition.given_id };
  const set = nearest(
    values.filter((v) => v.default_value_definition_id === definition.id),
    scopes,
  );
  if (set) return { ...base, value: set.value, source: { type: set.parent_type, parentId: set.parent_id, defaultValueId: set.id } };
  const literal = literalDefaultOf(definition.schema as InputProperty);
  if ('value' in literal) return { ...base, value: literal.value, source: { type: 'DEFINITION' } };
  if (!literal.ref || seen.has(definition.given_id) || seen.size >= MAX_REFERENCE_HOPS) return undefined;
  seen.add(definition.given_id);
  const [target] = await findDefinitionsByGivenIds(db, scopes.organizationId, [literal.ref]);
  if (!target) return undefined;
  const targetValues = await findValuesForScopes(db, scopes.organizationId, [target.id], [scopes.environmentId, scopes.projectId, scopes.organizationId]);
  const hit = await resolveOne(db, scopes, target, targetValues, seen);
  return hit ? { ...base, value: hit.value, source: hit.source } : undefined;
}

/** resolveDefaultValue is the effective value of one definition (by givenId) for an environment, or undefined. */
export async function resolveDefaultValue(db: Executor, scopes: Scopes, givenId: string): Promise<ResolvedDefaultValue | undefined> {
  const [definition] = await findDefinitionsByGivenIds(db, scopes.organizationId, [givenId]);
  if (!definition) return undefined;
  const [resolved] = await resolveDefinitions(db, scopes, [definition]);
  return resolved;
}
