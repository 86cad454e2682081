import { CompiledQuery } from 'kysely';
import { poolOf, type Db } from '../db/db.ts';
import type { GlobalRole } from '../db/enums.ts';
import { ForbiddenError, UnauthenticatedError } from '../errors.ts';
import type { Role } from './roles.ts';
import { tokenMatches } from './tokens.ts';

export { PRINCIPAL_TYPES, type PrincipalType } from '../db/enums.ts';
import type { PrincipalType } from '../db/enums.ts';
export const SUPER_ADMIN = 'SUPER_ADMIN';

/** The authenticated caller of one request, in the organization the request acts in. */
export interface Principal {
  principalType: PrincipalType;
  /** The user's id, or the service account's id for a service-account key. */
  userId: string;
  /** The API key that authenticated this request. */
  identityId: string;
  membershipId: string;
  organizationId: string;
  organizationName: string;
  role: Role;
  globalRole: string;
  email: string;
  fullName?: string;
  shortName?: string;
  isSuperAdmin: boolean;
  serviceAccountId?: string;
  /**
   * A user key bound to its organization (a Git sign-in's): it acts there only, as a member, and reaches
   * none of the user's other organizations, keys or links.
   */
  organizationOnly?: boolean;
  /**
   * The Git sign-in link this key came from (minted for a Git sign-in's session, or made with such a
   * key): the key is deleted with the link, and so is any key made with it.
   */
  gitIdentityId?: string;
}

interface CredentialRow {
  key_id: string;
  token_hash: string;
  user_id: string | null;
  service_account_id: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  key_org_id: string;
  organization_only: boolean;
  git_identity_id: string | null;
  email: string | null;
  full_name: string | null;
  short_name: string | null;
  global_role: GlobalRole | null;
  sa_name: string | null;
  sa_role: Role | null;
  org_id: string | null;
  org_name: string | null;
  membership_id: string | null;
  membership_role: Role | null;
}

/**
 * One round trip resolves the key, its owner, the organization the request acts in and the caller's
 * membership there. A service-account key always acts in its own organization; a user key in the
 * `X-Organization-Id` organization when sent, else the one it was created in. The text is fixed, so
 * it is built once rather than through the query builder, and it runs as a named statement: each
 * pooled connection parses and plans it once, not on every request (it runs on every cache miss).
 */
const CREDENTIAL_SQL = `
    select k.id as key_id, k.token_hash, k.user_id, k.service_account_id, k.expires_at, k.revoked_at,
           k.organization_id as key_org_id, k.organization_only, k.git_identity_id,
           u.email, u.full_name, u.short_name, u.global_role,
           sa.name as sa_name, sa.role as sa_role,
           o.id as org_id, o.name as org_name,
           m.id as membership_id, m.role as membership_role
      from api_keys k
      left join users u on u.id = k.user_id
      left join service_accounts sa on sa.id = k.service_account_id
      left join organizations o on o.id = case when k.service_account_id is not null
                                               then sa.organization_id
                                               else coalesce($1::text, k.organization_id) end
      left join memberships m on m.user_id = k.user_id and m.organization_id = o.id
     where k.token_hash = $2`;

const CREDENTIAL_STATEMENT = 'plinth_credential';

async function findCredential(db: Db, tokenHash: string, requestedOrgId: string | null): Promise<CredentialRow | undefined> {
  const pool = poolOf(db);
  if (pool) {
    const { rows } = await pool.query<CredentialRow>({ name: CREDENTIAL_STATEMENT, text: CREDENTIAL_SQL, values: [requestedOrgId, tokenHash] });
    return rows[0];
  }
  const { rows } = await db.executeQuery(CompiledQuery.raw(CREDENTIAL_SQL, [requestedOrgId, tokenHash]) as CompiledQuery<CredentialRow>);
  return rows[0];
}

/** A resolved credential: the principal, and when its key expires (ms since the epoch), if ever. */
export interface ResolvedCredential {
  principal: Principal;
  expiresAtMs: number | null;
}

/** resolveCredential looks the key up (one round trip) and says who it is, or throws 401/403. */
export async function resolveCredential(db: Db, token: string, tokenHash: string, requestedOrgId: string | null): Promise<ResolvedCredential> {
  const row = await findCredential(db, tokenHash, requestedOrgId);
  if (!row || !tokenMatches(token, row.token_hash)) throw new UnauthenticatedError('INVALID', 'The credential is not valid');
  if (row.revoked_at) throw new UnauthenticatedError('REVOKED', 'The credential has been revoked');
  if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw new UnauthenticatedError('EXPIRED', 'The credential has expired');
  return { principal: principalOf(row), expiresAtMs: row.expires_at ? row.expires_at.getTime() : null };
}

function principalOf(row: CredentialRow): Principal {
  if (row.service_account_id) {
    return {
      principalType: 'SERVICE_ACCOUNT',
      userId: row.service_account_id,
      serviceAccountId: row.service_account_id,
      identityId: row.key_id,
      membershipId: row.service_account_id,
      organizationId: row.org_id!,
      organizationName: row.org_name!,
      role: row.sa_role!,
      globalRole: 'USER',
      email: `${row.service_account_id}@service-accounts.plinth`,
      fullName: row.sa_name ?? undefined,
      isSuperAdmin: false,
      ...(row.git_identity_id ? { gitIdentityId: row.git_identity_id } : {}),
    };
  }

  if (row.organization_only && row.org_id !== row.key_org_id) {
    throw new ForbiddenError('This key acts only in the organization it was issued in', 'Auth:Organization:FORBIDDEN');
  }
  // A key bound to one organization carries its user's membership there, never a super-administrator's powers.
  const isSuperAdmin = row.global_role === SUPER_ADMIN && !row.organization_only;
  if (!row.org_id || (!row.membership_id && !isSuperAdmin)) {
    throw new ForbiddenError('You are not a member of that organization', 'Auth:Organization:FORBIDDEN');
  }
  return {
    principalType: 'MEMBERSHIP',
    userId: row.user_id!,
    identityId: row.key_id,
    membershipId: row.membership_id ?? '',
    organizationId: row.org_id,
    organizationName: row.org_name!,
    // A Git sign-in's key stops at ADMIN: the server's ADMINs control what it says, so what it vouches for must not be an OWNER's powers.
    role: isSuperAdmin ? 'OWNER' : row.organization_only && row.membership_role === 'OWNER' ? 'ADMIN' : row.membership_role!,
    globalRole: row.global_role ?? 'USER',
    email: row.email!,
    fullName: row.full_name ?? undefined,
    shortName: row.short_name ?? undefined,
    isSuperAdmin,
    ...(row.organization_only ? { organizationOnly: true } : {}),
    ...(row.git_identity_id ? { gitIdentityId: row.git_identity_id } : {}),
  };
}
