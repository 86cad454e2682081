// The reader's choice of theme, kept in a cookie of its own (it is no secret, and the sign-in form wears
// it too): light, dark, or the system's.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { cookieName, cookieOptions } from './sessions.service.ts';

export const THEMES = ['system', 'light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];

const THEME_COOKIE = 'plinth_theme';
const A_YEAR_S = 365 * 24 * 3600;

/** The theme the reader chose, `system` when none (or anything else) is set. */
export function themeOf(request: FastifyRequest): Theme {
  const value = request.cookies[cookieName(request, THEME_COOKIE)];
  return (THEMES as readonly string[]).includes(value ?? '') ? (value as Theme) : 'system';
}

export function setTheme(request: FastifyRequest, reply: FastifyReply, theme: Theme): void {
  reply.setCookie(cookieName(request, THEME_COOKIE), theme, cookieOptions(request, A_YEAR_S));
}
