import type { FastifyRequest } from 'fastify';
import type { Db } from '../platform/db/db.ts';
import { organizationSelector } from '../platform/auth/authenticate.ts';
import { resolveCredential, type Principal } from '../platform/auth/principal.ts';
import { assertPermission, type Permission } from '../platform/auth/roles.ts';
import { hashToken, presentedToken, RUN_TOKEN_PREFIX } from '../platform/auth/tokens.ts';
import { UnauthenticatedError } from '../platform/errors.ts';
import { findLiveRunCredential } from './opentofu.repo.ts';

/**
 * Who calls the state backend: an OpenTofu step of a run, with the credential its worker minted for that
 * run and stack only, or a person or service account with an API key (OpenTofu on their own machine).
 */
export type StateCaller =
  | { kind: 'run'; organizationId: string; stackId: string; runId: string; principalId: string }
  | { kind: 'key'; organizationId: string; principal: Principal; principalId: string };

/** The token of a backend request: OpenTofu sends it as HTTP Basic (`TF_HTTP_PASSWORD`); Bearer works too. */
function tokenOf(header: string | undefined): string {
  if (!header) throw new UnauthenticatedError('MISSING', 'The state backend needs a credential: HTTP Basic with the token as password, or Bearer');
  const token = presentedToken(header);
  if (token === undefined) throw new UnauthenticatedError('INVALID', 'The Authorization header must be HTTP Basic or Bearer');
  return token;
}

/** What an API key needs for each backend request: reading state is `state:read`, changing it or its lock `stack:write`. */
export function statePermissionOf(method: string): Permission {
  return method === 'GET' ? 'state:read' : 'stack:write';
}

/**
 * authenticateStateCaller resolves the caller of a state backend route, before its body is read. A run
 * credential is refused once it expired or its run finished; an API key acts in the organization
 * `X-Organization-Id` names (as on every other route) and must hold the request's permission.
 */
export async function authenticateStateCaller(db: Db, request: FastifyRequest): Promise<StateCaller> {
  const token = tokenOf(request.headers.authorization);
  if (token.length === 0 || token.length > 512) throw new UnauthenticatedError('INVALID', 'The credential is not valid');
  if (token.startsWith(RUN_TOKEN_PREFIX)) {
    const credential = await findLiveRunCredential(db, hashToken(token));
    if (!credential) throw new UnauthenticatedError('INVALID', 'The run credential is not valid, has expired, or its run has finished');
    return {
      kind: 'run',
      organizationId: credential.organization_id,
      stackId: credential.stack_id,
      runId: credential.run_id,
      principalId: `run:${credential.run_id}`,
    };
  }
  const requestedOrg = organizationSelector(request.headers['x-organization-id']);
  const { principal } = await resolveCredential(db, token, hashToken(token), requestedOrg);
  request.principal = principal;
  assertPermission(principal.role, statePermissionOf(request.method));
  return { kind: 'key', organizationId: principal.organizationId, principal, principalId: principal.userId };
}
