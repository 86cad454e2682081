import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { GitFlowKind } from '../platform/db/enums.ts';
import { BadRequestError } from '../platform/errors.ts';

/**
 * An OAuth login or an app install is bound to the browser that started it: the start answers with a
 * cookie holding a random value, and the sealed state holds that value's hash. The return leg is
 * accepted only from a browser that sends the cookie back. So a state started by someone else (an
 * attacker who sends a victim the provider's page, to connect the victim's account to the attacker's
 * organization or the other way round) is refused at the callback.
 */
export interface FlowCookie {
  name: string;
  value: string;
  /** The callback's path as the browser sees it (under PLINTH_PUBLIC_URL's path): the only request the cookie goes with. */
  path: string;
  maxAgeSeconds: number;
}

/**
 * Where each flow's browser comes back. A console sign-in comes back through the OAuth callback too
 * (the one address the Git server knows), which hands it on to the console's sign-in page.
 */
const CALLBACK_PATHS: Record<FlowReturn, string> = {
  OAUTH: '/gitoauth/callback',
  APP_INSTALL: '/gitapp/callback',
  LINK: '/gitoauth/callback',
  SIGN_IN: '/sign-in/git/callback',
};

/** A flow's return leg: an organization's OAuth connection or app install, or a user's identity link or sign-in. */
export type FlowReturn = GitFlowKind | IdentityPurpose;
export type IdentityPurpose = 'LINK' | 'SIGN_IN';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export const FLOW_COOKIE_PREFIX = 'plinth_flow_';

/** One cookie per flow, named after its nonce: flows started side by side in one browser each keep theirs. */
function flowCookieName(nonce: string): string {
  return `${FLOW_COOKIE_PREFIX}${sha256(nonce).slice(0, 16)}`;
}

/** The path a flow's binding cookie is sent to: its return leg's, under PLINTH_PUBLIC_URL's path. */
export function flowCookiePath(kind: FlowReturn, publicUrl: string): string {
  return `${new URL(publicUrl).pathname.replace(/\/+$/, '')}${CALLBACK_PATHS[kind]}`;
}

/** A new binding: the cookie for the browser, and the hash that goes into the sealed state. */
export function newFlowBinding(kind: FlowReturn, nonce: string, ttlSeconds: number, publicUrl: string): { cookie: FlowCookie; hash: string } {
  const value = randomBytes(24).toString('base64url');
  const path = flowCookiePath(kind, publicUrl);
  return { cookie: { name: flowCookieName(nonce), value, path, maxAgeSeconds: ttlSeconds }, hash: sha256(value) };
}

/** Refuses a return leg whose browser does not hold the flow's cookie (400, nothing stored). */
export function assertSameBrowser(hash: string | undefined, cookies: Record<string, string | undefined>, nonce: string): void {
  const value = cookies[flowCookieName(nonce)];
  const matches = hash !== undefined && value !== undefined && timingSafeEqual(Buffer.from(sha256(value)), Buffer.from(hash.padEnd(64).slice(0, 64)));
  if (!matches)
    throw new BadRequestError(
      'The flow was started in another browser (or its cookie was lost): start it again from this browser',
      [],
      'Git:State:OTHER_BROWSER',
    );
}
