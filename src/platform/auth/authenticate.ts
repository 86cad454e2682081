import type { FastifyRequest } from 'fastify';
import type { Db } from '../db/db.ts';
import { UnauthenticatedError } from '../errors.ts';
import { resolvePrincipal } from './principal.ts';
import { assertPermission } from './roles.ts';
import { hashToken } from './tokens.ts';

/**
 * authenticate sets `request.principal` from the bearer credential and checks the route's permission.
 * Nothing is cached between requests, so a revoked or expired key fails on the very next one, in any
 * process.
 */
export async function authenticate(db: Db, request: FastifyRequest): Promise<void> {
  const header = request.headers.authorization;
  if (!header) throw new UnauthenticatedError('MISSING', 'An Authorization: Bearer credential is required');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match || match[1].length > 512) throw new UnauthenticatedError('INVALID', 'The Authorization header must be "Bearer <token>"');
  const token = match[1];
  const orgHeader = request.headers['x-organization-id'];
  const requestedOrg = typeof orgHeader === 'string' && orgHeader.length > 0 && orgHeader.length <= 64 ? orgHeader : null;
  request.principal = await resolvePrincipal(db, token, hashToken(token), requestedOrg);
  const permission = request.routeOptions.config.permission ?? 'read';
  if (permission !== 'authenticated') assertPermission(request.principal.role, permission);
}
