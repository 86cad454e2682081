// Signing in through a Git server, and the reader's account page where they link the accounts that do
// it. The sign-in itself is the console's (it opens the session); everything else about the accounts
// (the OAuth login, whose account it is, the link) is the Git servers' domain, and the account page
// works through the API like every other page.

import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { completeIdentitySignIn, signInChoices, signInServer, startIdentitySignIn } from '../git-servers/git-identity.service.ts';
import { CallbackQuery } from '../git-servers/git-servers.schema.ts';
import { FLOW_COOKIE_PREFIX, flowCookiePath, type FlowCookie } from '../git-servers/flow-binding.ts';
import { AppError } from '../platform/errors.ts';
import type { App } from '../platform/http/app.ts';
import type { ApiRedirect } from './console-api.ts';
import { CHOICES } from './forms.ts';
import { CsrfField, IdText, OrgParams, PAGE, RecordParams, type Pages } from './pages.tsx';
import { cookieName, cookieOptions, issueSignInToken, signInThroughGit, signInTokenMatches } from './sessions.service.ts';
import { AccountPage, ContinuePage } from './views/account.tsx';
import { GitSignInPage, SignIn } from './views/sign-in.tsx';

/** The Git servers a browser signed in through, newest first: a plain list of ids, offered again on the sign-in page. */
const REMEMBERED_COOKIE = 'plinth_git_sign_in';
const REMEMBERED_MAX = 3;
const ID = /^[A-Za-z0-9_-]{1,64}$/;

function rememberedServerIds(request: FastifyRequest): string[] {
  const value = request.cookies[cookieName(request, REMEMBERED_COOKIE)] ?? '';
  return value
    .split('.')
    .filter((id) => ID.test(id))
    .slice(0, REMEMBERED_MAX);
}

function rememberServer(request: FastifyRequest, reply: FastifyReply, serverId: string): void {
  const ids = [serverId, ...rememberedServerIds(request).filter((id) => id !== serverId)].slice(0, REMEMBERED_MAX);
  reply.setCookie(cookieName(request, REMEMBERED_COOKIE), ids.join('.'), cookieOptions(request, 400 * 24 * 3600));
}

/** What the sign-in page offers beside the key form: the Git servers this browser signed in through before. */
export function rememberedGitServers(app: App, request: FastifyRequest) {
  return signInChoices(app.db, rememberedServerIds(request));
}

/** A Git flow's binding cookie (flow-binding.ts): for its return leg only, and sent along the provider's top-level redirect back (Lax). */
function setFlowCookie(app: App, reply: FastifyReply, cookie: FlowCookie | ApiRedirect['cookies'][number], maxAge: number | undefined) {
  reply.setCookie(cookie.name, cookie.value, {
    path: cookie.path,
    maxAge,
    httpOnly: true,
    sameSite: 'lax',
    secure: app.config.publicUrl.startsWith('https:'),
  });
}

export function consoleAccountRoutes(app: App, pages: Pages) {
  const signInAgain = async (request: FastifyRequest, reply: FastifyReply, status: number, error: string) =>
    pages.html(
      reply.status(status),
      'Sign in',
      undefined,
      <SignIn signInToken={issueSignInToken(request, reply)} error={error} gitServers={await rememberedGitServers(app, request)} />,
    );

  const ServerParams = Type.Object({ id: IdText });

  // A server's sign-in link: a page that says where the login is, whose button starts it. Only a POST
  // from this site with the sign-in form's token starts one, so another site cannot sign a browser in
  // (as the attacker, through a server the attacker runs).
  /**
   * A form that starts a Git login answers with a page that goes on to the Git server, not a redirect:
   * the Content-Security-Policy's form-action 'self' holds for a form's redirects too.
   */
  const leaveFor = (reply: FastifyReply, location: string) =>
    pages.html(reply, 'Continue', undefined, <ContinuePage to={location} message={`Going on to ${new URL(location).host}`} />, location);

  app.get('/sign-in/git/:id', { ...PAGE, schema: { hide: true, params: ServerParams } }, async (request, reply) => {
    const server = await signInServer(app.db, request.params.id);
    return pages.html(reply, `Sign in through ${server.name}`, undefined, <GitSignInPage server={server} signInToken={issueSignInToken(request, reply)} />);
  });

  app.post('/sign-in/git/:id', { ...PAGE, schema: { hide: true, params: ServerParams, body: Type.Object({ _signin: CsrfField }) } }, async (request, reply) => {
    if (!signInTokenMatches(request, request.body._signin))
      return signInAgain(request, reply, 403, 'The sign-in form expired or came from another site: try again.');
    const { location, cookie } = await startIdentitySignIn(app.secrets, app.db, app.config, request.params.id, app.config.publicUrl);
    setFlowCookie(app, reply, cookie, cookie.maxAgeSeconds);
    return leaveFor(reply, location);
  });

  // The end of a Git sign-in: the OAuth callback hands it on here with its query, and the browser its binding cookie.
  app.get('/sign-in/git/callback', { ...PAGE, schema: { hide: true, querystring: CallbackQuery } }, async (request, reply) => {
    // The flow's binding cookie has done its work: a replayed callback finds none (whatever the Git server does with a code twice).
    for (const name of Object.keys(request.cookies)) {
      if (name.startsWith(FLOW_COOKIE_PREFIX)) reply.clearCookie(name, { path: flowCookiePath('SIGN_IN', app.config.publicUrl) });
    }
    try {
      const who = await completeIdentitySignIn(app.db, app.secrets, app.config, request.query, request.cookies);
      const me = await signInThroughGit(app, request, reply, who);
      rememberServer(request, reply, who.serverId);
      const home = `/orgs/${encodeURIComponent(me.organizationId)}/runs`;
      return pages.html(reply, 'Signed in', undefined, <ContinuePage to={home} message={`Signed in as ${who.login}`} />, home);
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      return signInAgain(request, reply, error.status, `The Git sign-in did not work: ${error.message}.`);
    }
  });

  // Where a link's OAuth login comes back to (its returnTo): a page, so the session cookie goes with the
  // next request. It leads to one place only, the account page: a page that led anywhere would let another
  // site send a signed-in browser to any of the console's GETs with its session cookie.
  app.get('/account/linked', { ...PAGE, schema: { hide: true, querystring: Type.Object({ org: IdText }) } }, async (request, reply) => {
    const to = `/orgs/${encodeURIComponent(request.query.org)}/account`;
    return pages.html(reply, 'Account linked', undefined, <ContinuePage to={to} message="Account linked" />, to);
  });

  app.get('/orgs/:org/account', { ...PAGE, schema: { hide: true, params: OrgParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    const isUser = ctx.me.principalType === 'MEMBERSHIP';
    const [identities, servers] = await Promise.all([
      isUser ? ctx.api.get('/git-identities', { limit: CHOICES }) : { data: [] },
      ctx.api.get('/git-self-hosted-servers', { limit: CHOICES }),
    ]);
    return pages.html(
      reply,
      'Your account',
      ctx.viewer,
      <AccountPage
        orgPath={ctx.orgPath}
        organizationId={ctx.me.organizationId}
        isUser={isUser}
        identities={identities.data}
        servers={servers.data}
        csrfToken={ctx.viewer.csrfToken}
      />,
    );
  });

  // Starts the API's link flow and passes its redirect and binding cookie on to the browser: a form of
  // the session's, so no other site can link an account of its choosing to the reader.
  app.post(
    '/orgs/:org/account/link/:id',
    { ...PAGE, schema: { hide: true, params: RecordParams, body: Type.Object({ _csrf: CsrfField }) } },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const back = `/account/linked?org=${encodeURIComponent(ctx.me.organizationId)}`;
      const started = await ctx.api.redirect(`/gitoauth/self-hosted/${encodeURIComponent(request.params.id)}/link`, { returnTo: back });
      for (const cookie of started.cookies) setFlowCookie(app, reply, cookie, cookie.maxAge);
      return leaveFor(reply, started.location);
    },
  );

  app.post(
    '/orgs/:org/account/identities/:id/unlink',
    { ...PAGE, schema: { hide: true, params: RecordParams, body: Type.Object({ _csrf: CsrfField }) } },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      await ctx.api.delete(`/git-identities/${encodeURIComponent(request.params.id)}`);
      return reply.redirect(`${ctx.orgPath}/account`, 303);
    },
  );
}
