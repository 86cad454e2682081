import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { isUniqueViolation } from '../platform/db/db-errors.ts';
import { findUsages, inUseError } from '../platform/db/dependents.ts';
import { ConflictError, ForbiddenError, NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import {
  deleteDefinitionById,
  findDefinitionsPage,
  findVisibleDefinition,
  insertDefinition,
  lockVisibleDefinition,
  moduleDefinitionRowToApi,
  updateDefinition,
  type ModuleDefinitionRow,
} from './module-definitions.repo.ts';
import type { CreateModuleDefinition, ModuleDefinitionListQuery, UpdateModuleDefinition } from './module-definitions.schema.ts';

const ENTITY = 'ModuleDefinition';

/** getDefinitionRow reads a definition the organization sees (its own or a global one), else 404. */
export async function getDefinitionRow(db: Executor, principal: Principal, id: string): Promise<ModuleDefinitionRow> {
  const row = await findVisibleDefinition(db, principal.organizationId, id);
  if (!row) throw new NotFoundError(ENTITY, id);
  return row;
}

/** A global definition is every organization's to read and only a super-administrator's to change. */
export function assertMayChange(principal: Principal, row: ModuleDefinitionRow): void {
  if (row.organization_id === null && !principal.isSuperAdmin) {
    throw new ForbiddenError(
      `Module definition ${row.id} is global: only a super-administrator changes it or publishes its versions`,
      'Api:ModuleDefinition:GLOBAL_READ_ONLY',
      { moduleDefinitionId: row.id },
    );
  }
}

export async function createModuleDefinition(db: Db, principal: Principal, input: CreateModuleDefinition) {
  if (input.global && !principal.isSuperAdmin) {
    throw new ForbiddenError('Only a super-administrator publishes a global module definition', 'Api:ModuleDefinition:GLOBAL_READ_ONLY');
  }
  return db.transaction().execute(async (trx) => {
    try {
      const row = await insertDefinition(trx, {
        id: newId(),
        organizationId: input.global ? null : principal.organizationId,
        type: input.type,
        name: input.name,
        description: input.description ?? '',
      });
      return moduleDefinitionRowToApi(row);
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new ConflictError(ENTITY, 'ALREADY_EXISTS', `A ${input.global ? 'global ' : ''}module definition of type "${input.type}" already exists`);
      }
      throw error;
    }
  });
}

export async function getModuleDefinition(db: Db, principal: Principal, id: string) {
  return moduleDefinitionRowToApi(await getDefinitionRow(db, principal, id));
}

export async function listModuleDefinitions(db: Db, principal: Principal, query: ModuleDefinitionListQuery, page: PageRequest) {
  const rows = await findDefinitionsPage(db, principal.organizationId, query, page);
  const { items, meta } = toPage(rows, page, (r) => r.id);
  return { items: items.map(moduleDefinitionRowToApi), meta };
}

export async function updateModuleDefinition(db: Db, principal: Principal, id: string, input: UpdateModuleDefinition) {
  return db.transaction().execute(async (trx) => {
    const row = await lockVisibleDefinition(trx, principal.organizationId, id);
    if (!row) throw new NotFoundError(ENTITY, id);
    assertMayChange(principal, row);
    if (input.name === undefined && input.description === undefined) return moduleDefinitionRowToApi(row);
    return moduleDefinitionRowToApi(await updateDefinition(trx, id, input));
  });
}

/** deleteModuleDefinition removes the definition and its versions; refused (409, naming them) while instances of it exist. */
export async function deleteModuleDefinition(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await lockVisibleDefinition(trx, principal.organizationId, id);
    if (!row) throw new NotFoundError(ENTITY, id);
    assertMayChange(principal, row);
    const usages = await findUsages(trx, 'ModuleDefinition', id);
    if (usages.length > 0) throw inUseError(ENTITY, `Module definition ${id}`, usages);
    await deleteDefinitionById(trx, id);
  });
}
