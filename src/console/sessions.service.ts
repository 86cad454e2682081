// Console sign-in: an API key pasted once becomes a server-side session. The browser holds only a
// random token (HttpOnly, SameSite=Strict cookie); the key stays on the server, sealed. See
// docs/console.md#sign-in.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashToken } from '../platform/auth/tokens.ts';
import type { Executor } from '../platform/db/db.ts';
import type { App } from '../platform/http/app.ts';
import { ApiCallError, apiCaller } from './console-api.ts';
import { SecretOpenError } from '../platform/secrets/secret-box.ts';
import { appendAuditEvent, type AuditEventDraft } from '../platform/audit/audit-writer.repo.ts';
import { deleteSignInKeys, issueSignInKey } from '../credentials/sign-in-keys.ts';
import type { GitSignIn } from '../git-servers/git-identity.service.ts';
import { deletePrincipalSessions, deleteSession, findLiveSession, insertSession, pruneSessions, touchSession } from './sessions.repo.ts';

/** How many sessions one user (or service account) keeps; signing in again ends the oldest beyond it. */
const SESSIONS_PER_PRINCIPAL = 20;
/** last_seen_at is written at most this often per session: the idle expiry needs no finer grain. */
const TOUCH_EVERY_MS = 60_000;
const SIGN_IN_COOKIE = 'plinth_sign_in';
const SESSION_COOKIE = 'plinth_session';

/** Who the API says the key is (GET /auth/whoami). */
export interface WhoAmI {
  principalType: 'MEMBERSHIP' | 'SERVICE_ACCOUNT';
  userId: string;
  identityId: string;
  organizationId: string;
  organizationName: string;
  role: 'VIEWER' | 'MEMBER' | 'ADMIN' | 'OWNER';
  email: string;
  fullName?: string;
  isSuperAdmin: boolean;
}

export interface ConsoleSession {
  tokenHash: string;
  /** The API key the session acts with. */
  apiKey: string;
  apiKeyId: string;
  /** Opened by a Git sign-in, with a key minted for it and bound to homeOrganizationId. */
  mintedKey: boolean;
  principalType: WhoAmI['principalType'];
  principalId: string;
  /** Where the console opens: the organization the key acted in at sign-in. */
  homeOrganizationId: string;
  /** What every form and htmx request of the session must send back (csrfMatches). */
  csrfToken: string;
}

/** A sign-in the API refused (the key is unknown, revoked or expired): the form says so. */
export class SignInRefused extends Error {}

const sealContext = (tokenHash: string) => `console-session:${tokenHash}`;

/**
 * Served over HTTPS (directly, or behind a trusted proxy that says so), the cookies are Secure and
 * __Host- bound: no other host, not even a sibling subdomain, can set or overwrite them.
 */
export function cookieName(request: FastifyRequest, name: string): string {
  return request.protocol === 'https' ? `__Host-${name}` : name;
}

export function cookieOptions(request: FastifyRequest, maxAgeSeconds?: number) {
  return { path: '/', httpOnly: true, sameSite: 'strict' as const, secure: request.protocol === 'https', ...(maxAgeSeconds ? { maxAge: maxAgeSeconds } : {}) };
}

/** Whether a session exists still (not signed out, not expired): a long-lived stream asks again as it goes. */
export async function sessionLive(app: App, session: ConsoleSession): Promise<boolean> {
  return (await findLiveSession(app.db, session.tokenHash, app.config.consoleSessions.idleMs)) !== undefined;
}

function csrfTokenOf(app: App, tokenHash: string): string {
  const key = app.secrets.deriveKey('console-csrf')!;
  return createHmac('sha256', key.bytes).update(tokenHash).digest('base64url');
}

function sameSecret(a: string | undefined, b: string): boolean {
  if (typeof a !== 'string') return false;
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export function csrfMatches(session: ConsoleSession, presented: string | undefined): boolean {
  return sameSecret(presented, session.csrfToken);
}

/**
 * The sign-in form's own token, also set as a cookie: a POST to /sign-in must carry both, so another
 * site cannot sign a browser in with the attacker's key (login CSRF).
 */
export function issueSignInToken(request: FastifyRequest, reply: FastifyReply): string {
  const token = randomBytes(24).toString('base64url');
  reply.setCookie(cookieName(request, SIGN_IN_COOKIE), token, cookieOptions(request, 3600));
  return token;
}

export function signInTokenMatches(request: FastifyRequest, presented: string | undefined): boolean {
  const cookie = request.cookies[cookieName(request, SIGN_IN_COOKIE)];
  return typeof cookie === 'string' && sameSecret(presented, cookie);
}

/** How a session was opened, for its audit entry: a pasted key, or a Git server's login. */
type SignInVia = { via: 'api-key' } | { via: 'git'; gitSelfHostedServerId: string; login: string };

/** Who a session acts as, and with which key. */
type SessionPrincipal = Pick<WhoAmI, 'principalType' | 'userId' | 'identityId' | 'organizationId'>;

/** signIn checks a pasted key with the API and opens a session for it; the cookie is set on `reply`. */
export async function signIn(app: App, request: FastifyRequest, reply: FastifyReply, apiKey: string): Promise<WhoAmI> {
  let me: WhoAmI;
  try {
    me = (await apiCaller(app, request, apiKey).get<{ data: WhoAmI }>('/auth/whoami')).data;
  } catch (error) {
    if (error instanceof ApiCallError && (error.status === 401 || error.status === 403)) throw new SignInRefused(error.message);
    throw error;
  }
  setSessionCookie(app, request, reply, await app.db.transaction().execute((trx) => openSession(app, trx, request, apiKey, me, { via: 'api-key' }, 303)));
  await finishSignIn(app, request, reply, me.userId);
  return me;
}

/**
 * signInThroughGit opens a session for a user a Git server's login named (completeIdentitySignIn), in
 * the organization of that server, acting with a key minted for the session: the key, the session and
 * the audit entry are one transaction, so a failure leaves no key behind.
 */
export async function signInThroughGit(app: App, request: FastifyRequest, reply: FastifyReply, who: GitSignIn): Promise<{ organizationId: string }> {
  await app.db
    .transaction()
    .execute(async (trx) => {
      const key = await issueSignInKey(trx, {
        userId: who.userId,
        organizationId: who.organizationId,
        gitIdentityId: who.identityId,
        name: `Console sign-in through ${who.serverName}`.slice(0, 255),
        expiresAt: new Date(Date.now() + app.config.consoleSessions.maxAgeMs),
      });
      const principal = { principalType: 'MEMBERSHIP' as const, userId: who.userId, identityId: key.id, organizationId: who.organizationId };
      const how = { via: 'git' as const, gitSelfHostedServerId: who.serverId, login: who.login };
      return openSession(app, trx, request, key.token, principal, how, 200);
    })
    .then((token) => setSessionCookie(app, request, reply, token));
  await finishSignIn(app, request, reply, who.userId, who.organizationId);
  return { organizationId: who.organizationId };
}

/** Stores a new session (and its audit entry) in `trx`; the token for the browser's cookie is returned. */
async function openSession(
  app: App,
  trx: Executor,
  request: FastifyRequest,
  apiKey: string,
  me: SessionPrincipal,
  how: SignInVia,
  statusCode: number,
): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const tokenHash = hashToken(token);
  await insertSession(trx, {
    tokenHash,
    apiKeyId: me.identityId,
    principalId: me.userId,
    principalType: me.principalType,
    sealedKey: app.secrets.seal(apiKey, sealContext(tokenHash)),
    organizationId: me.organizationId,
    expiresAt: new Date(Date.now() + app.config.consoleSessions.maxAgeMs),
    mintedKey: how.via === 'git',
  });
  await appendAuditEvent(trx, app.secrets, sessionAudit(request, me, me.organizationId, 'console.sign-in', how, statusCode));
  return token;
}

function setSessionCookie(app: App, request: FastifyRequest, reply: FastifyReply, token: string): void {
  reply.setCookie(cookieName(request, SESSION_COOKIE), token, cookieOptions(request, Math.floor(app.config.consoleSessions.maxAgeMs / 1000)));
}

/**
 * After a sign-in: the principal's ended and surplus sessions go (with the keys minted for them; after a
 * Git sign-in, only Git sign-ins of its organization count), and the sign-in form's token.
 */
async function finishSignIn(app: App, request: FastifyRequest, reply: FastifyReply, principalId: string, mintedIn?: string): Promise<void> {
  const settings = app.config.consoleSessions;
  await deleteSignInKeys(app.db, await pruneSessions(app.db, principalId, settings.idleMs, SESSIONS_PER_PRINCIPAL, mintedIn));
  reply.clearCookie(cookieName(request, SIGN_IN_COOKIE), cookieOptions(request));
}

/** A sign-in or sign-out as an audit entry of the organization the session opens in: who, with which key, from where. */
function sessionAudit(
  request: FastifyRequest,
  who: Pick<WhoAmI, 'principalType' | 'userId' | 'identityId'>,
  organizationId: string,
  action: 'console.sign-in' | 'console.sign-out',
  diff: Record<string, unknown>,
  statusCode: number,
): AuditEventDraft {
  const userAgent = request.headers['user-agent'];
  return {
    organizationId,
    actorType: who.principalType,
    actorId: who.userId,
    apiKeyId: who.identityId,
    action,
    resourceType: 'console-session',
    resourceId: null,
    outcome: 'SUCCESS',
    statusCode,
    errorCode: null,
    requestId: request.id,
    ip: request.ip,
    userAgent: typeof userAgent === 'string' ? userAgent.slice(0, 512) : null,
    diff,
  };
}

/** The request's live session, or undefined (no cookie, an unknown one, or one that has ended). */
export async function currentSession(app: App, request: FastifyRequest): Promise<ConsoleSession | undefined> {
  const token = request.cookies[cookieName(request, SESSION_COOKIE)];
  if (!token || token.length > 100) return undefined;
  const tokenHash = hashToken(token);
  const row = await findLiveSession(app.db, tokenHash, app.config.consoleSessions.idleMs);
  if (!row) return undefined;
  let apiKey: string;
  try {
    apiKey = app.secrets.open(row.sealed_key, sealContext(tokenHash));
  } catch (error) {
    // Sealed with a secret key this process no longer has (rotated out), or altered: the session is over.
    if (!(error instanceof SecretOpenError)) throw error;
    await deleteSignInKeys(app.db, await deleteSession(app.db, tokenHash));
    return undefined;
  }
  if (Date.now() - row.last_seen_at.getTime() > TOUCH_EVERY_MS) await touchSession(app.db, tokenHash);
  return {
    tokenHash,
    apiKey,
    apiKeyId: row.api_key_id,
    mintedKey: row.minted_key,
    principalType: row.principal_type,
    principalId: row.principal_id,
    homeOrganizationId: row.organization_id,
    csrfToken: csrfTokenOf(app, tokenHash),
  };
}

/** signOut ends this session on the server (the cookie is worthless wherever it was copied), or all of the principal's. */
export async function signOut(app: App, request: FastifyRequest, reply: FastifyReply, session: ConsoleSession, everywhere: boolean): Promise<void> {
  await app.db.transaction().execute(async (trx) => {
    // A Git sign-in's session reaches its organization only: "everywhere" is that organization's Git sign-ins.
    const within = session.mintedKey ? session.homeOrganizationId : undefined;
    const minted = everywhere ? await deletePrincipalSessions(trx, session.principalId, within) : await deleteSession(trx, session.tokenHash);
    await deleteSignInKeys(trx, minted);
    const who = { principalType: session.principalType, userId: session.principalId, identityId: session.apiKeyId };
    await appendAuditEvent(trx, app.secrets, sessionAudit(request, who, session.homeOrganizationId, 'console.sign-out', { everywhere }, 303));
  });
  reply.clearCookie(cookieName(request, SESSION_COOKIE), cookieOptions(request));
}
