import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Executor, Trx } from '../platform/db/db.ts';
import { isEmptyPatch, isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import { inUseError } from '../platform/db/dependents.ts';
import { ConflictError, ForbiddenError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { checkInputProperty, defaultValueRefsOf } from '../inputs/check-property.ts';
import type { InputProperty } from '../inputs/inputs.schema.ts';
import { formatProblems, validateValue } from '../inputs/validate-value.ts';
import {
  definitionRowToDefinition,
  deleteDefinitionById,
  findDefinitionById,
  findDefinitionsByGivenIds,
  findDefinitionsPage,
  findDefinitionsReferencing,
  insertDefinition,
  updateDefinition,
  type DefinitionRow,
} from './default-value-definitions.repo.ts';
import type { CreateDefaultValueDefinition, UpdateDefaultValueDefinition } from './default-value-definitions.schema.ts';
import { countDefinitionValues, deleteDefaultValuesOfDefinition, findDefinitionValuesBatch } from './default-values.repo.ts';

const ENTITY = 'DefaultValueDefinition';
/** How many broken values a 422 names; the rest are counted. */
const MAX_NAMED_VALUES = 20;

/**
 * assertSchemaSound refuses (422) a schema its own rules contradict, and `$defaultValue` references to
 * definitions the organization does not have, or to the definition itself (a cycle of one).
 */
async function assertSchemaSound(db: Executor, organizationId: string, schema: InputProperty, selfGivenId: string) {
  const problems = formatProblems(checkInputProperty(schema), '/data/schema');
  const refs = [...new Set(defaultValueRefsOf(schema))];
  const found = new Set((await findDefinitionsByGivenIds(db, organizationId, refs)).map((d) => d.given_id));
  for (const ref of refs) {
    if (ref === selfGivenId) problems.push(`/data/schema: $defaultValue ${ref} refers to this definition itself`);
    else if (!found.has(ref)) problems.push(`/data/schema: $defaultValue ${ref} names no definition of this organization`);
  }
  if (problems.length > 0) throw new RuleViolationError(ENTITY, 'INVALID_SCHEMA', 'The schema is not valid', problems);
}

/** SYSTEM definitions belong to Plinth: no role may change or delete them. */
function assertUserOwned(row: DefinitionRow) {
  if (row.created_by_type === 'SYSTEM') {
    throw new ForbiddenError(`Definition ${row.given_id} is managed by the system and cannot be changed or deleted`, `Api:${ENTITY}:SYSTEM_MANAGED`);
  }
}

/** Every stored value must still satisfy a changed schema; a 422 names the values that would not. */
async function assertValuesFit(trx: Trx, definitionId: string, schema: InputProperty) {
  const broken: string[] = [];
  let brokenCount = 0;
  let after: string | undefined;
  for (;;) {
    const batch = await findDefinitionValuesBatch(trx, definitionId, after, 500);
    for (const row of batch) {
      const problems = validateValue({ ...schema, required: true } as InputProperty, row.value);
      if (problems.length === 0) continue;
      brokenCount++;
      if (brokenCount <= MAX_NAMED_VALUES) {
        broken.push(...formatProblems(problems, `value ${row.id} (${row.parent_type.toLowerCase()} ${row.parent_id}) `).map((l) => l.replace(') : ', '): ')));
      }
    }
    if (batch.length < 500) break;
    after = batch[batch.length - 1].id;
  }
  if (brokenCount > 0) {
    if (brokenCount > MAX_NAMED_VALUES) broken.push(`and ${brokenCount - MAX_NAMED_VALUES} more values`);
    throw new RuleViolationError(ENTITY, 'SCHEMA_REJECTS_VALUES', `The new schema rejects ${brokenCount} stored value(s); change or delete them first`, broken);
  }
}

export async function getDefinitionRow(db: Executor, principal: Principal, id: string, lock?: 'update' | 'share') {
  const row = await findDefinitionById(db, principal.organizationId, id, lock);
  if (!row) throw new NotFoundError(ENTITY, id);
  return row;
}

/** createDefinition adds a USER definition; its givenId is unique within the organization. */
export async function createDefinition(db: Db, principal: Principal, input: CreateDefaultValueDefinition) {
  await assertSchemaSound(db, principal.organizationId, input.schema, input.givenId);
  const insert = insertDefinition(db, { id: newId(), organizationId: principal.organizationId, createdByType: 'USER', ...input });
  const row = await rethrowAs(
    insert,
    isUniqueViolation,
    () => new ConflictError(ENTITY, 'ALREADY_EXISTS', `A definition with givenId ${input.givenId} already exists`),
  );
  return definitionRowToDefinition(row);
}

export async function getDefinition(db: Db, principal: Principal, id: string) {
  return definitionRowToDefinition(await getDefinitionRow(db, principal, id));
}

export async function listDefinitions(db: Db, principal: Principal, page: PageRequest) {
  const { items, meta } = toPage(await findDefinitionsPage(db, principal.organizationId, page), page, (r) => r.id);
  return { items: items.map(definitionRowToDefinition), meta };
}

/**
 * updateDefinitionFields changes the supplied fields. The definition row is locked `for update` while
 * the stored values are re-validated, so no value write (which locks it `for share`) slips in between.
 */
export async function updateDefinitionFields(db: Db, principal: Principal, id: string, changes: UpdateDefaultValueDefinition) {
  return db.transaction().execute(async (trx) => {
    const current = await getDefinitionRow(trx, principal, id, 'update');
    assertUserOwned(current);
    if (isEmptyPatch(changes)) return definitionRowToDefinition(current);
    if (changes.schema !== undefined) {
      await assertSchemaSound(trx, principal.organizationId, changes.schema, current.given_id);
      await assertValuesFit(trx, id, changes.schema);
    }
    return definitionRowToDefinition(await updateDefinition(trx, id, changes));
  });
}

/**
 * deleteDefinition refuses (409) while other definitions' defaults refer to it, and while values exist
 * unless `cascade` deletes them with it.
 */
export async function deleteDefinition(db: Db, principal: Principal, id: string, cascade: boolean) {
  await db.transaction().execute(async (trx) => {
    const current = await getDefinitionRow(trx, principal, id, 'update');
    assertUserOwned(current);
    const referencing = await findDefinitionsReferencing(trx, principal.organizationId, current.given_id);
    if (referencing.length > 0) {
      throw inUseError(
        ENTITY,
        `Definition ${current.given_id}`,
        referencing.map((ref) => ({ kind: 'definitions whose default refers to it', ref })),
      );
    }
    if (cascade) {
      await deleteDefaultValuesOfDefinition(trx, id);
    } else {
      const count = await countDefinitionValues(trx, id);
      if (count > 0) {
        throw new ConflictError(ENTITY, 'IN_USE', `Definition ${current.given_id} still has ${count} value(s); delete them or pass ?cascade=true`, {
          details: [{ title: 'Used by', render: 'list', items: [`default values: ${count}`] }],
        });
      }
    }
    await deleteDefinitionById(trx, id);
  });
}
