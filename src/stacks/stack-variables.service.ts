import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { NotFoundError } from '../platform/errors.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { findStackById } from './stacks.repo.ts';
import { deleteSensitiveVariable, findSensitiveVariables, upsertSensitiveVariable, type SensitiveVariableRow } from './stack-variables.repo.ts';
import type { SensitiveVariable } from './stack-variables.schema.ts';

/** The context a sensitive variable is sealed under: the worker opens it under the same (src/opentofu). */
export const sensitiveVariableContext = (stackId: string, name: string) => `stack_sensitive_variables:${stackId}:${name}`;

function rowToVariable(row: SensitiveVariableRow): SensitiveVariable {
  return { name: row.name, stackId: row.stack_id, sensitive: true, createdAt: row.created_at, updatedAt: row.updated_at };
}

async function stackOf(db: Db, principal: Principal, stackId: string) {
  const stack = await findStackById(db, principal.organizationId, stackId);
  if (!stack) throw new NotFoundError('Stack', stackId);
  return stack;
}

export async function listSensitiveVariables(db: Db, principal: Principal, stackId: string): Promise<SensitiveVariable[]> {
  await stackOf(db, principal, stackId);
  return (await findSensitiveVariables(db, stackId)).map(rowToVariable);
}

/** setSensitiveVariable seals the value (any JSON) and answers with its name only: it is never shown again. */
export async function setSensitiveVariable(
  db: Db,
  secrets: SecretBox,
  principal: Principal,
  stackId: string,
  name: string,
  value: unknown,
): Promise<SensitiveVariable> {
  const stack = await stackOf(db, principal, stackId);
  const sealedValue = secrets.seal(JSON.stringify(value ?? null), sensitiveVariableContext(stack.id, name));
  return rowToVariable(await upsertSensitiveVariable(db, { stackId: stack.id, organizationId: stack.organization_id, name, sealedValue }));
}

export async function removeSensitiveVariable(db: Db, principal: Principal, stackId: string, name: string): Promise<void> {
  await stackOf(db, principal, stackId);
  if (!(await deleteSensitiveVariable(db, stackId, name))) throw new NotFoundError('SensitiveVariable', name);
}
