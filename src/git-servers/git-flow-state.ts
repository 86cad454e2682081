import { randomBytes } from 'node:crypto';
import type { GitFlowKind } from '../platform/db/enums.ts';
import type { IdentityPurpose } from './flow-binding.ts';
import { BadRequestError } from '../platform/errors.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';

/**
 * The `state` of an OAuth login or an app installation: what it carries (the caller, the organization,
 * the server, where to return) sealed with AES-256-GCM under the service's key, so it is signed
 * (altered: it does not open) and unreadable to the browser and the Git server. Its nonce is stored and
 * consumed once (git_flow_states); its expiry is inside it and beside the nonce.
 */
export interface FlowState {
  nonce: string;
  /** IDENTITY: a user's link or sign-in (`purpose`), which keeps no row: see git-identity.service.ts. */
  kind: GitFlowKind | 'IDENTITY';
  purpose?: IdentityPurpose;
  /** An identity flow's PKCE verifier, sealed inside the state, as it has no row to keep it in. */
  verifier?: string;
  organizationId: string;
  userId: string | null;
  serverId: string | null;
  returnTo: string;
  /** Expiry, in epoch milliseconds. */
  expiresAt: number;
  /** The hash of the cookie the starting browser got (flow-binding.ts): the return leg must send it. */
  binding: string;
}

const CONTEXT = 'git_flow_states.state';

export function newNonce(): string {
  return randomBytes(24).toString('base64url');
}

export function sealFlowState(secrets: SecretBox, state: FlowState): string {
  return secrets.seal(JSON.stringify(state), CONTEXT);
}

/** stateError is the 400 of a state that cannot be trusted; nothing is stored after one. */
export function stateError(reason: 'INVALID' | 'EXPIRED' | 'USED', message: string): BadRequestError {
  return new BadRequestError(message, [], `Git:State:${reason}`);
}

/** openFlowState returns the state if it is this service's, of this kind, and not expired; else a 400. */
export function openFlowState(secrets: SecretBox, sealed: string | undefined, kind: FlowState['kind'], now = Date.now()): FlowState {
  if (!sealed) throw stateError('INVALID', 'The request carries no state');
  let state: FlowState;
  try {
    state = JSON.parse(secrets.open(sealed, CONTEXT)) as FlowState;
  } catch {
    throw stateError('INVALID', 'The state was not issued by this service, or was altered');
  }
  if (state.kind !== kind || typeof state.nonce !== 'string') throw stateError('INVALID', 'The state was issued for another flow');
  if (!(state.expiresAt > now)) throw stateError('EXPIRED', 'The state has expired; start again');
  return state;
}

/**
 * safeReturnTo accepts a path or a URL on the service's own origin (PLINTH_PUBLIC_URL) and nothing else,
 * so the end of a flow never redirects a browser to a place a third party chose.
 */
export function safeReturnTo(returnTo: string | undefined, publicUrl: string): string {
  const base = new URL(publicUrl);
  if (!returnTo) return base.toString();
  let target: URL;
  try {
    target = new URL(returnTo, base);
  } catch {
    throw new BadRequestError('returnTo is not a URL', ['returnTo: not a URL']);
  }
  if (target.origin !== base.origin || returnTo.startsWith('//')) {
    throw new BadRequestError('returnTo must be a path or a URL on PLINTH_PUBLIC_URL', [`returnTo: must be on ${base.origin}`]);
  }
  return target.toString();
}
