import type { FastifyRequest } from 'fastify';
import type { CredentialStore } from './credential-store.ts';
import { BadRequestError, ForbiddenError, NotFoundError, UnauthenticatedError } from '../errors.ts';
import type { Principal } from './principal.ts';
import { assertPermission } from './roles.ts';
import { hashToken, RUN_TOKEN_PREFIX } from './tokens.ts';

/** An organization id as Plinth issues them, with room for longer ones: letters, digits, `_`, `-`. */
const ORGANIZATION_SELECTOR = /^[A-Za-z0-9_-]{1,64}$/;

/** The X-Organization-Id header: absent is null; present but not an organization id is a 400, never ignored. */
export function organizationSelector(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  if (typeof header !== 'string' || !ORGANIZATION_SELECTOR.test(header)) {
    throw new BadRequestError(
      'X-Organization-Id must be one organization id (1 to 64 letters, digits, "_" or "-")',
      ['headers/x-organization-id: is not an organization id'],
      'Api:Request:INVALID_HEADER',
    );
  }
  return header;
}

/**
 * The principal of a route whose path names the organization (`config.organizationParam`: the module
 * registry's namespace, which OpenTofu has no header for): a user key acts there as X-Organization-Id
 * would make it, a service-account key only in its own organization. A key that cannot act there, and a
 * name that is no organization, are the same 404, so the path tells nothing of the organizations the
 * caller is not in.
 */
async function principalInPathOrganization(credentials: CredentialStore, token: string, organizationId: unknown): Promise<Principal> {
  const notFound = new NotFoundError('Organization', String(organizationId));
  if (typeof organizationId !== 'string' || !ORGANIZATION_SELECTOR.test(organizationId)) throw notFound;
  let principal: Principal;
  try {
    principal = await credentials.resolve(token, hashToken(token), organizationId);
  } catch (error) {
    if (error instanceof ForbiddenError && error.code === 'Auth:Organization:FORBIDDEN') throw notFound;
    throw error;
  }
  if (principal.organizationId !== organizationId) throw notFound;
  return principal;
}

/**
 * authenticate sets `request.principal` from the bearer credential and checks the route's permission.
 * The credential store serves it from memory only while no change can have been missed (see
 * credential-store.ts): a revoked or expired key fails on its next request in this process, and within
 * milliseconds (at most a second) in every other.
 */
export async function authenticate(credentials: CredentialStore, request: FastifyRequest): Promise<void> {
  const header = request.headers.authorization;
  if (!header) throw new UnauthenticatedError('MISSING', 'An Authorization: Bearer credential is required');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match || match[1].length > 512) throw new UnauthenticatedError('INVALID', 'The Authorization header must be "Bearer <token>"');
  const token = match[1];
  // A run credential is valid on the state backend only: here it is refused unread, so that sending
  // them costs the database nothing (it is still a failure, counted like any other).
  if (token.startsWith(RUN_TOKEN_PREFIX)) throw new UnauthenticatedError('INVALID', 'A run credential is valid only on the state backend');
  const pathOrganization = request.routeOptions.config.organizationParam;
  if (pathOrganization) {
    request.principal = await principalInPathOrganization(credentials, token, (request.params as Record<string, unknown>)[pathOrganization]);
  } else {
    const requestedOrg = organizationSelector(request.headers['x-organization-id']);
    request.principal = await credentials.resolve(token, hashToken(token), requestedOrg);
  }
  const permission = request.routeOptions.config.permission ?? 'read';
  if (permission !== 'authenticated') assertPermission(request.principal.role, permission);
}
