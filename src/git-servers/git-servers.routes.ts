import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import type { FlowCookie } from './flow-binding.ts';
import { completeAppInstall, listAppInstallations, startAppInstall } from './git-app.service.ts';
import { completeIdentityLink, identityPurposeOf, listOwnIdentities, signInCallbackUrl, startIdentityLink, unlinkOwnIdentity } from './git-identity.service.ts';
import { completeOAuthCallback, startOAuthLogin } from './git-oauth.service.ts';
import {
  AppCallbackQuery,
  CallbackQuery,
  CreateGitSelfHostedServer,
  GitAppInstallation,
  GitIdentity,
  GitListQuery,
  GitSelfHostedServer,
  ReturnQuery,
  ServerParams,
  UpdateGitSelfHostedServer,
} from './git-servers.schema.ts';
import { createGitServer, deleteGitServer, getGitServer, listGitServers, updateGitServer } from './git-servers.service.ts';

const Redirect = { 302: { type: 'null', description: 'A redirect: the Location header says where' } } as const;

/** The binding cookie of a Git flow: for its callback only, never to scripts, sent back on the provider's top-level redirect. */
function flowCookieOptions(app: App, cookie: FlowCookie) {
  return { path: cookie.path, maxAge: cookie.maxAgeSeconds, httpOnly: true, sameSite: 'lax' as const, secure: app.config.publicUrl.startsWith('https:') };
}

export async function gitServerRoutes(app: App) {
  const tags = ['git'];

  app.post(
    '/git-self-hosted-servers',
    {
      config: { permission: 'code-source:manage', auditFields: ['name', 'provider', 'baseUrl', 'authorizeUrl', 'tokenUrl', 'userUrl', 'clientId', 'scopes'] },
      schema: {
        tags,
        summary: 'Register a self-hosted Git server and its OAuth client',
        body: CreateGitSelfHostedServer,
        response: { 201: Envelope(GitSelfHostedServer) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createGitServer(app.db, app.secrets, app.config, request.principal, request.body.data) }),
  );

  app.get(
    '/git-self-hosted-servers',
    {
      schema: {
        tags,
        summary: "List the organization's self-hosted Git servers",
        querystring: GitListQuery,
        response: { 200: ListEnvelope(GitSelfHostedServer) },
      },
    },
    async (request) => {
      const { items, meta } = await listGitServers(app.db, app.config, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/git-self-hosted-servers/:id',
    {
      schema: { tags, summary: 'Read a self-hosted Git server', params: IdParams, response: { 200: Envelope(GitSelfHostedServer) } },
    },
    async (request) => ({ data: await getGitServer(app.db, app.config, request.principal, request.params.id) }),
  );

  app.patch(
    '/git-self-hosted-servers/:id',
    {
      config: { permission: 'code-source:manage', auditFields: ['name', 'authorizeUrl', 'tokenUrl', 'userUrl', 'clientId', 'scopes'] },
      schema: {
        tags,
        summary: 'Change a self-hosted Git server',
        params: IdParams,
        body: UpdateGitSelfHostedServer,
        response: { 200: Envelope(GitSelfHostedServer) },
      },
    },
    async (request) => ({ data: await updateGitServer(app.db, app.secrets, app.config, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/git-self-hosted-servers/:id',
    {
      config: { permission: 'code-source:manage' },
      schema: {
        tags,
        summary: 'Delete a self-hosted Git server no code source uses (409 otherwise)',
        params: IdParams,
        response: { ...errorResponses({ 409: 'Code sources still use the Git server; `details` names them' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteGitServer(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  // A GET that changes something (it records a state): held to the same permission as the connection it makes.
  app.get(
    '/gitoauth/self-hosted/:gitSelfHostedServerId/login',
    {
      config: { permission: 'code-source:manage' },
      schema: {
        tags,
        operationId: 'startGitOAuthLogin',
        summary: 'Start OAuth with a self-hosted Git server (302 to its authorization page, with state and PKCE)',
        params: ServerParams,
        querystring: ReturnQuery,
        response: Redirect,
      },
    },
    async (request, reply) => {
      const { location, cookie } = await startOAuthLogin(
        app.db,
        app.secrets,
        app.config,
        request.principal,
        request.params.gitSelfHostedServerId,
        request.query.returnTo,
      );
      return reply.setCookie(cookie.name, cookie.value, flowCookieOptions(app, cookie)).redirect(location, 302);
    },
  );

  app.get(
    '/gitoauth/self-hosted/:gitSelfHostedServerId/link',
    {
      config: { permission: 'authenticated' },
      schema: {
        tags,
        operationId: 'startGitIdentityLink',
        summary: 'Link your account on a self-hosted Git server, so that its login signs you in to the web console (302 to its authorization page)',
        params: ServerParams,
        querystring: ReturnQuery,
        response: { ...Redirect, ...errorResponses({ 422: 'Plinth does not know where the server says who a token belongs to (register its userUrl)' }) },
      },
    },
    async (request, reply) => {
      const { location, cookie } = await startIdentityLink(
        app.secrets,
        app.db,
        app.config,
        request.principal,
        request.params.gitSelfHostedServerId,
        request.query.returnTo,
      );
      return reply.setCookie(cookie.name, cookie.value, flowCookieOptions(app, cookie)).redirect(location, 302);
    },
  );

  app.get(
    '/git-identities',
    {
      config: { permission: 'authenticated' },
      schema: {
        tags,
        summary: 'List your linked accounts on self-hosted Git servers (of every organization)',
        querystring: GitListQuery,
        response: { 200: ListEnvelope(GitIdentity) },
      },
    },
    async (request) => {
      const { items, meta } = await listOwnIdentities(app.db, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.delete(
    '/git-identities/:id',
    {
      config: { permission: 'authenticated' },
      schema: { tags, summary: 'Unlink one of your accounts: it signs no one in any more', params: IdParams, response: { 204: NoContent } },
    },
    async (request, reply) => {
      await unlinkOwnIdentity(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/gitoauth/callback',
    {
      config: { public: true },
      schema: {
        tags,
        operationId: 'completeGitOAuthLogin',
        summary:
          'OAuth return leg (no credential): checks the state, exchanges the code, stores the tokens sealed (or links the account, or hands a console sign-in on), 302 to the original URL',
        querystring: CallbackQuery,
        response: {
          ...Redirect,
          ...errorResponses({ 409: 'The account is linked to another user', 422: 'The token endpoint is at an address Plinth does not connect to', 502: true }),
        },
      },
    },
    async (request, reply) => {
      const purpose = identityPurposeOf(app.secrets, request.query.state);
      // A console sign-in is the console's to finish (it opens the session): the same query goes on there.
      if (purpose === 'SIGN_IN') return reply.redirect(`${signInCallbackUrl(app.config)}?${request.url.split('?')[1] ?? ''}`, 302);
      if (purpose === 'LINK') return reply.redirect(await completeIdentityLink(app.db, app.secrets, app.config, request.query, request.cookies), 302);
      // The binding cookie is left to expire with its state: a replay is then told the state was used.
      return reply.redirect(await completeOAuthCallback(app.db, app.secrets, app.config, request.query, request.cookies), 302);
    },
  );

  app.get(
    '/gitapp/install',
    {
      config: { permission: 'code-source:manage' },
      schema: {
        tags,
        operationId: 'startGitAppInstall',
        summary: "Install the configured Git app (302 to the provider's installation page, with a signed state)",
        querystring: ReturnQuery,
        response: { ...Redirect, ...errorResponses({ 422: 'No Git app is configured on this installation of Plinth' }) },
      },
    },
    async (request, reply) => {
      const { location, cookie } = await startAppInstall(app.db, app.secrets, app.config, request.principal, request.query.returnTo);
      return reply.setCookie(cookie.name, cookie.value, flowCookieOptions(app, cookie)).redirect(location, 302);
    },
  );

  app.get(
    '/gitapp/callback',
    {
      config: { public: true },
      schema: {
        tags,
        operationId: 'completeGitAppInstall',
        summary: "The app install's return leg (the app's Setup URL; no credential): records the installation, 302 to the original URL",
        querystring: AppCallbackQuery,
        response: {
          ...Redirect,
          ...errorResponses({
            403: 'The account that came back cannot access this installation of the app',
            409: 'The installation belongs to another organization',
            422: 'The installation cannot be verified',
            502: true,
          }),
        },
      },
    },
    async (request, reply) => {
      return reply.redirect(await completeAppInstall(app.db, app.secrets, app.config, request.query, request.cookies), 302);
    },
  );

  app.get(
    '/git-app-installations',
    {
      schema: {
        tags,
        summary: "List the organization's Git app installations",
        querystring: GitListQuery,
        response: { 200: ListEnvelope(GitAppInstallation) },
      },
    },
    async (request) => {
      const { items, meta } = await listAppInstallations(app.db, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );
}
