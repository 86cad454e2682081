import type { Principal } from '../platform/auth/principal.ts';
import { isEmptyPatch, isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { findUsages, inUseError } from '../platform/db/dependents.ts';
import { ConflictError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import {
  cloudAccountRowToCloudAccount,
  deleteCloudAccountById,
  findCloudAccountById,
  findCloudAccountsPage,
  insertCloudAccount,
  updateCloudAccount as updateCloudAccountRow,
} from './cloud-accounts.repo.ts';
import type { CreateCloudAccount, UpdateCloudAccount } from './cloud-accounts.schema.ts';

/** A role can only be assumed in the account it belongs to. */
function assertRoleInAccount(roleArn: string, accountId: string) {
  const roleAccount = roleArn.split(':')[4];
  if (roleAccount !== accountId) {
    throw new RuleViolationError('CloudAccount', 'ROLE_ACCOUNT_MISMATCH', 'roleArn must be a role of the account accountId', [
      `/data/roleArn: belongs to account ${roleAccount}, not ${accountId}`,
    ]);
  }
}

export async function getCloudAccountRow(db: Executor, principal: Principal, id: string) {
  const row = await findCloudAccountById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('CloudAccount', id);
  return row;
}

export async function createCloudAccount(db: Db, principal: Principal, input: CreateCloudAccount) {
  assertRoleInAccount(input.roleArn, input.accountId);
  const row = await rethrowAs(
    insertCloudAccount(db, { id: newId(), organizationId: principal.organizationId, ...input }),
    isUniqueViolation,
    () => new ConflictError('CloudAccount', 'ALREADY_EXISTS', `A cloud account with givenId ${input.givenId} already exists`),
  );
  return cloudAccountRowToCloudAccount(row);
}

export async function getCloudAccount(db: Db, principal: Principal, id: string) {
  return cloudAccountRowToCloudAccount(await getCloudAccountRow(db, principal, id));
}

export async function listCloudAccounts(db: Db, principal: Principal, page: PageRequest) {
  const { items, meta } = toPage(await findCloudAccountsPage(db, principal.organizationId, page), page, (r) => r.id);
  return { items: items.map(cloudAccountRowToCloudAccount), meta };
}

export async function updateCloudAccount(db: Db, principal: Principal, id: string, changes: UpdateCloudAccount) {
  const current = await getCloudAccountRow(db, principal, id);
  if (isEmptyPatch(changes)) return cloudAccountRowToCloudAccount(current);
  if (changes.roleArn !== undefined) assertRoleInAccount(changes.roleArn, current.account_id);
  const row = await updateCloudAccountRow(db, id, { name: changes.name, role_arn: changes.roleArn, external_id: changes.externalId });
  return cloudAccountRowToCloudAccount(row);
}

/** deleteCloudAccount refuses while execution environments run in the account; the lock orders it against their inserts. */
export async function deleteCloudAccount(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await findCloudAccountById(trx, principal.organizationId, id, true);
    if (!row) throw new NotFoundError('CloudAccount', id);
    const usages = await findUsages(trx, 'CloudAccount', id);
    if (usages.length > 0) throw inUseError('CloudAccount', `Cloud account ${row.given_id}`, usages);
    await deleteCloudAccountById(trx, id);
  });
}
