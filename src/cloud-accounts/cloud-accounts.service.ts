import { randomBytes } from 'node:crypto';
import type { CredentialStore } from '../platform/auth/credential-store.ts';
import type { Principal } from '../platform/auth/principal.ts';
import { isEmptyPatch, isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { findUsages, inUseError } from '../platform/db/dependents.ts';
import { AppError, ConflictError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import {
  cloudAccountRowToCloudAccount,
  deleteCloudAccountById,
  findCloudAccountById,
  findCloudAccountForIngest,
  findCloudAccountsPage,
  insertCloudAccount,
  rotateIngestSecret as rotateIngestSecretRow,
  updateCloudAccount as updateCloudAccountRow,
  type CloudAccountRow,
} from './cloud-accounts.repo.ts';
import type { CreateCloudAccount, RotateIngestSecret, UpdateCloudAccount } from './cloud-accounts.schema.ts';
import { DEFAULT_PREVIOUS_SECRET_SECONDS, ingestSecretMatches, newIngestSecret } from './ingest-secrets.ts';

/**
 * The sts:ExternalId of a new cloud account: Plinth's, random and unique to it. Were it the caller's
 * choice, a tenant could name another tenant's role and that tenant's external id, and have Plinth
 * act in the other's AWS account (the confused deputy).
 */
function newExternalId(): string {
  return `plinth-${randomBytes(16).toString('hex')}`;
}

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
  const { secret, sha256 } = newIngestSecret();
  const row = await rethrowAs(
    insertCloudAccount(db, { id: newId(), organizationId: principal.organizationId, ...input, externalId: newExternalId(), ingestSecretSha256: sha256 }),
    isUniqueViolation,
    () => new ConflictError('CloudAccount', 'ALREADY_EXISTS', `A cloud account with givenId ${input.givenId} already exists`),
  );
  return { ...cloudAccountRowToCloudAccount(row), ingestSecret: secret };
}

/**
 * rotateCloudAccountIngestSecret makes a new ingest secret; the current one stays valid for
 * `previousSecretValidForSeconds`, long enough to change the EventBridge connection.
 */
export async function rotateCloudAccountIngestSecret(db: Db, principal: Principal, id: string, input: RotateIngestSecret) {
  const { secret, sha256 } = newIngestSecret();
  const seconds = input.previousSecretValidForSeconds ?? DEFAULT_PREVIOUS_SECRET_SECONDS;
  const row = await rotateIngestSecretRow(db, principal.organizationId, id, sha256, new Date(Date.now() + seconds * 1000));
  if (!row) throw new NotFoundError('CloudAccount', id);
  return {
    ingestSecret: secret,
    ingestSecretCreatedAt: row.ingest_secret_created_at!,
    ...(seconds > 0 && row.previous_ingest_secret_sha256 ? { previousIngestSecretExpiresAt: row.previous_ingest_secret_expires_at! } : {}),
  };
}

/**
 * cloudAccountOfEvents returns the account an event is sent to when `secret` is its ingest secret (or,
 * during a rotation, the previous one). Anything else, an unknown account included, is the same 401.
 */
export async function cloudAccountOfEvents(db: Db, credentials: CredentialStore, id: string, secret: string | undefined) {
  const matches = (row: CloudAccountRow) => secret !== undefined && ingestSecretMatches(row, secret);
  const row = secret && id ? await credentials.ingestAccount(id, () => findCloudAccountForIngest(db, id), matches) : undefined;
  // A row served from memory was kept for an earlier event's secret: this one's is checked all the same.
  if (!row || !matches(row)) {
    // Not a failed authentication of the API's: EventBridge delivers every account's events from the same
    // AWS addresses, so one account's misconfigured connection must not get those addresses blocked.
    throw new AppError(401, 'Api:CloudEvent:UNVERIFIED', "Send the cloud account's ingest secret in the X-Plinth-Ingest-Secret header");
  }
  return row;
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
  const row = await updateCloudAccountRow(db, id, { name: changes.name, role_arn: changes.roleArn });
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
