import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Trx } from '../platform/db/db.ts';
import { ConflictError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import type { ParentType } from '../platform/db/enums.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import type { InputProperty } from '../inputs/inputs.schema.ts';
import { formatProblems, validateValue } from '../inputs/validate-value.ts';
import { findEnvironmentById } from '../environments/environments.repo.ts';
import { findProjectById } from '../projects/projects.repo.ts';
import { findDefinitionById, findDefinitionsPage, type DefinitionRow } from './default-value-definitions.repo.ts';
import {
  defaultValueRowToDefaultValue,
  deleteDefaultValueById,
  findDefaultValueById,
  findDefaultValuesPage,
  insertDefaultValue,
  updateDefaultValue as updateDefaultValueRow,
} from './default-values.repo.ts';
import type { CreateDefaultValue, DefaultValueListQuery } from './default-values.schema.ts';
import { resolveDefinitions } from './resolver.ts';

const ENTITY = 'DefaultValue';

/** A default value is a value: null or absent is refused even when the schema says `required: false`. */
function assertValueFits(definition: DefinitionRow, value: unknown) {
  const problems = validateValue({ ...(definition.schema as InputProperty), required: true } as InputProperty, value);
  if (problems.length > 0) {
    throw new RuleViolationError(
      ENTITY,
      'INVALID_VALUE',
      `The value does not satisfy the schema of ${definition.given_id}`,
      formatProblems(problems, '/data/value'),
    );
  }
}

/**
 * The definition, locked `for share`: a concurrent schema change (which locks it `for update` and
 * re-validates every value) waits for this write, or this write waits and validates against the new schema.
 */
async function lockDefinitionForValue(trx: Trx, principal: Principal, id: string, missing: () => Error) {
  const definition = await findDefinitionById(trx, principal.organizationId, id, 'share');
  if (!definition) throw missing();
  return definition;
}

/**
 * What kind of scope an id is in the organization, or undefined when it is none of them there. A
 * project or environment is locked `for key share`, so one being deleted meanwhile (it locks `for
 * update`) either waits for this value to exist and deletes it too, or is gone before it is looked up.
 */
async function lockParent(trx: Trx, organizationId: string, parentId: string): Promise<ParentType | undefined> {
  if (parentId === organizationId) return 'ORGANIZATION';
  if (await findProjectById(trx, organizationId, parentId, 'keyShare')) return 'PROJECT';
  if (await findEnvironmentById(trx, organizationId, parentId, 'keyShare')) return 'ENVIRONMENT';
  return undefined;
}

async function getValueRow(db: Db | Trx, principal: Principal, id: string) {
  const row = await findDefaultValueById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError(ENTITY, id);
  return row;
}

/** createDefaultValue sets a definition's value on an organization, project or environment: one per definition and parent. */
export async function createDefaultValue(db: Db, principal: Principal, input: CreateDefaultValue) {
  return db.transaction().execute(async (trx) => {
    const definition = await lockDefinitionForValue(
      trx,
      principal,
      input.defaultValueDefinitionId,
      () => new NotFoundError('DefaultValueDefinition', input.defaultValueDefinitionId),
    );
    const parentType = await lockParent(trx, principal.organizationId, input.parentId);
    if (!parentType) {
      throw new NotFoundError('Parent', input.parentId);
    }
    assertValueFits(definition, input.value);
    const insert = insertDefaultValue(trx, {
      id: newId(),
      organizationId: principal.organizationId,
      definitionId: definition.id,
      parentId: input.parentId,
      parentType,
      value: input.value,
    });
    const row = await rethrowAs(
      insert,
      isUniqueViolation,
      () =>
        new ConflictError(
          ENTITY,
          'ALREADY_EXISTS',
          `${definition.given_id} already has a value on ${parentType.toLowerCase()} ${input.parentId}; PATCH it instead`,
        ),
    );
    return defaultValueRowToDefaultValue(row);
  });
}

export async function getDefaultValue(db: Db, principal: Principal, id: string) {
  return defaultValueRowToDefaultValue(await getValueRow(db, principal, id));
}

export async function listDefaultValues(db: Db, principal: Principal, page: PageRequest, query: DefaultValueListQuery) {
  const rows = await findDefaultValuesPage(db, principal.organizationId, page, { definitionId: query.defaultValueDefinitionId, parentId: query.parentId });
  const { items, meta } = toPage(rows, page, (r) => r.id);
  return { items: items.map(defaultValueRowToDefaultValue), meta };
}

export async function updateDefaultValue(db: Db, principal: Principal, id: string, value: unknown) {
  return db.transaction().execute(async (trx) => {
    const current = await getValueRow(trx, principal, id);
    const definition = await lockDefinitionForValue(trx, principal, current.default_value_definition_id, () => new NotFoundError(ENTITY, id));
    assertValueFits(definition, value);
    return defaultValueRowToDefaultValue(await updateDefaultValueRow(trx, id, value));
  });
}

export async function deleteDefaultValue(db: Db, principal: Principal, id: string) {
  await getValueRow(db, principal, id);
  await deleteDefaultValueById(db, id);
}

/** resolveForEnvironment pages through the organization's definitions with their effective values for one environment. */
export async function resolveForEnvironment(db: Db, principal: Principal, environmentId: string, page: PageRequest, givenId?: string) {
  const environment = await findEnvironmentById(db, principal.organizationId, environmentId);
  if (!environment) throw new NotFoundError('Environment', environmentId);
  const scopes = { organizationId: principal.organizationId, projectId: environment.project_id, environmentId };
  const { items, meta } = toPage(await findDefinitionsPage(db, principal.organizationId, page, givenId), page, (r) => r.id);
  return { items: await resolveDefinitions(db, scopes, items), meta };
}
