// What every console page's route shares: the route options, the schemas of ids in paths, the signed-in
// context (session, API caller, who is signed in) and sending a page as HTML.

import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ComponentChildren } from 'preact';
import { ForbiddenError } from '../platform/errors.ts';
import type { App } from '../platform/http/app.ts';
import type { Assets } from './assets.ts';
import { apiCaller, type ApiCaller } from './console-api.ts';
import { csrfMatches, currentSession, type ConsoleSession, type WhoAmI } from './sessions.service.ts';
import { themeOf } from './preferences.ts';
import { renderPage, type Viewer } from './views/layout.tsx';

export const CsrfField = Type.String({ maxLength: 100 });
/** An id as Plinth issues them: never `.` or `..`, which would move the API path they are put in. */
export const IdText = Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' });
export const OrgParams = Type.Object({ org: IdText });
export const RecordParams = Type.Object({ org: IdText, id: IdText });

// Not in the OpenAPI document (pages are not API operations) nor in the audit log: what a page does,
// it does through the API, whose audit entries name the session's principal.
export const PAGE = { config: { public: true, audit: false }, schema: { hide: true } } as const;

/** A page that needs a signed-in browser was asked for without one: it goes to the sign-in form. */
export class SignInRequired extends Error {}

/** What a signed-in page works with. */
export interface PageContext {
  session: ConsoleSession;
  api: ApiCaller;
  me: WhoAmI;
  viewer: Viewer;
  orgPath: string;
}

export interface Pages {
  /** The signed-in context of a page in organization `org`; a POST must also carry the session's CSRF token. */
  context(request: FastifyRequest, org: string): Promise<PageContext>;
  /** Sends a whole page (one that sends the browser on to `refreshTo` at once, when given: see PageProps). */
  html(reply: FastifyReply, title: string, viewer: Viewer | undefined, body: ComponentChildren, refreshTo?: string): FastifyReply;
}

export function pages(app: App, assets: Assets): Pages {
  return {
    async context(request, org) {
      const session = await currentSession(app, request);
      if (!session) throw new SignInRequired();
      if (request.method !== 'GET') {
        const presented = (request.body as { _csrf?: string } | undefined)?._csrf ?? request.headers['x-csrf-token'];
        if (!csrfMatches(session, typeof presented === 'string' ? presented : undefined)) {
          throw new ForbiddenError('The form is out of date or came from another site: reload the page and try again', 'Auth:Csrf:INVALID');
        }
      }
      const api = apiCaller(app, request, session.apiKey, org);
      const me = (await api.get<{ data: WhoAmI }>('/auth/whoami')).data;
      const viewer = {
        name: me.fullName || me.email,
        role: me.role,
        organizationId: me.organizationId,
        organizationName: me.organizationName,
        csrfToken: session.csrfToken,
      };
      return { session, api, me, viewer, orgPath: `/orgs/${encodeURIComponent(me.organizationId)}` };
    },
    html: (reply, title, viewer, body, refreshTo) =>
      reply
        .type('text/html; charset=utf-8')
        .send(renderPage({ title, assets, viewer, theme: themeOf(reply.request), path: pagePath(reply.request), refreshTo, children: body })),
  };
}

/**
 * Where the page the reader sees can be asked for again (the theme form goes back there): its own URL,
 * or for a page that answers a form, the page the form was on (a form's own URL may take no GET).
 */
function pagePath(request: FastifyRequest): string {
  if (request.method === 'GET') return request.url;
  const referer = request.headers.referer;
  try {
    const from = referer ? new URL(referer) : undefined;
    return from && from.host === request.host ? sameSitePath(`${from.pathname}${from.search}`) : '/';
  } catch {
    return '/';
  }
}

/**
 * A path on this site to go on to; anything else is the home page: another host (`//host`, `/\\host`),
 * and any control character, space, backslash or non-ASCII character (a browser drops a tab in `/\t/host`).
 */
export function sameSitePath(to: string | undefined): string {
  return to && /^\/(?!\/)[!-[\]-~]*$/.test(to) ? to : '/';
}
