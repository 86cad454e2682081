import { promises as fs } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { SUPER_ADMIN } from '../platform/auth/principal.ts';
import { generateToken, hashToken, tokenDisplayPrefix } from '../platform/auth/tokens.ts';
import type { Db, Trx } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import { insertMembership } from '../memberships/memberships.repo.ts';
import { insertOrganization } from '../organizations/organizations.repo.ts';
import { seedSystemDefinitions } from '../default-values/system-definitions.ts';
import { insertUserIfAbsent, updateUserGlobalRole } from '../users/users.repo.ts';
import { findApiKeyByHash, insertApiKey, restoreApiKey } from './api-keys.repo.ts';

export const DEFAULT_ORGANIZATION_NAME = 'Default';

export interface BootstrapOptions {
  adminToken?: string;
  adminEmail: string;
  dataDir?: string;
}

export interface BootstrapResult {
  /** Set only when a token was generated: the caller prints it once. */
  generatedToken?: string;
  adminUserId?: string;
}

async function defaultOrganizationOf(trx: Trx, userId: string): Promise<string> {
  const existing = await trx
    .selectFrom('memberships')
    .innerJoin('organizations', 'organizations.id', 'memberships.organization_id')
    .select('organizations.id')
    .where('memberships.user_id', '=', userId)
    .where('memberships.role', '=', 'OWNER')
    .where('organizations.name', '=', DEFAULT_ORGANIZATION_NAME)
    .orderBy('organizations.id')
    .executeTakeFirst();
  if (existing) return existing.id;
  const org = await insertOrganization(trx, { id: newId(), name: DEFAULT_ORGANIZATION_NAME, billingEmail: 'billing@localhost' });
  await insertMembership(trx, { id: newId(), organizationId: org.id, userId, role: 'OWNER' });
  return org.id;
}

async function ensureAdminHolds(trx: Trx, email: string, token: string): Promise<string> {
  const user = await insertUserIfAbsent(trx, { id: newId(), email, globalRole: SUPER_ADMIN });
  if (user.global_role !== SUPER_ADMIN) await updateUserGlobalRole(trx, user.id, SUPER_ADMIN);
  const organizationId = await defaultOrganizationOf(trx, user.id);
  await seedSystemDefinitions(trx, organizationId);
  const tokenHash = hashToken(token);
  const existing = await findApiKeyByHash(trx, tokenHash);
  if (existing && (existing.revoked_at || existing.expires_at || existing.user_id !== user.id)) {
    await restoreApiKey(trx, existing.id, user.id);
  } else if (!existing) {
    await insertApiKey(trx, {
      id: newId(),
      name: 'bootstrap',
      tokenHash,
      tokenPrefix: tokenDisplayPrefix(token),
      organizationId,
      userId: user.id,
    });
  }
  return user.id;
}

/**
 * ensureAdmin makes sure a super-administrator exists who owns the `Default` organization and holds a
 * key. With PLINTH_ADMIN_TOKEN that key's token is exactly the configured value, and a key with that
 * token that was revoked or expired since is restored; without it, and only
 * on a database with no user yet, a token is generated and written to `<data dir>/admin-token`.
 * Idempotent, and safe when several processes start at once (one advisory lock serializes them).
 */
export async function ensureAdmin(db: Db, options: BootstrapOptions): Promise<BootstrapResult> {
  const result = await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('plinth.bootstrap'))`.execute(trx);
    if (options.adminToken) return { adminUserId: await ensureAdminHolds(trx, options.adminEmail, options.adminToken) };
    const anyUser = await trx.selectFrom('users').select('id').limit(1).executeTakeFirst();
    if (anyUser) return {};
    const token = generateToken();
    return { adminUserId: await ensureAdminHolds(trx, options.adminEmail, token), generatedToken: token };
  });
  if (result.generatedToken && options.dataDir) {
    await fs.mkdir(options.dataDir, { recursive: true });
    await fs.writeFile(path.join(options.dataDir, 'admin-token'), result.generatedToken + '\n', { mode: 0o600 });
  }
  return result;
}
