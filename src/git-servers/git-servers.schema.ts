import { Type, type Static } from '@sinclair/typebox';
import { GIT_PROVIDERS } from '../platform/db/enums.ts';
import { Body, Name, Nullable, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

const HttpUrl = Type.String({ minLength: 8, maxLength: 2048, pattern: '^https?://', format: 'uri', description: 'An http(s) URL' });
const ClientId = Type.String({ minLength: 1, maxLength: 512, pattern: '^[!-~]+$', description: 'The OAuth client id the server issued' });
const ClientSecret = Type.String({ minLength: 1, maxLength: 4096, writeOnly: true, description: 'Write-only: stored sealed, never returned' });

/** A self-hosted Git server (GitLab, Gitea, GitHub Enterprise...) the organization connects to through OAuth. */
export const GitSelfHostedServer = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    name: Type.String(),
    provider: StringEnum(GIT_PROVIDERS),
    baseUrl: Type.String(),
    authorizeUrl: Type.String({ description: 'The OAuth authorization endpoint in use (given, or derived from baseUrl and provider)' }),
    tokenUrl: Type.String({ description: 'The OAuth token endpoint in use' }),
    userUrl: Nullable(
      Type.String({
        description:
          "Where Plinth asks whose an OAuth token is (given, or the provider's user API); null: unknown, so no one can link an account or sign in through this server",
      }),
    ),
    clientId: Type.String(),
    scopes: Type.String(),
    connected: Type.Boolean({ description: 'Whether the organization holds OAuth tokens for this server' }),
    loginUrl: Type.String({ description: 'GET it (authenticated, ADMIN) to connect the organization through OAuth' }),
    linkUrl: Type.String({ description: 'GET it (authenticated, as a user) to link your account on this server, so that it signs you in to the web console' }),
    signInUrl: Type.String({ description: 'The web console page that signs in a user who linked their account on this server' }),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
  },
  { $id: 'GitSelfHostedServer', title: 'GitSelfHostedServer' },
);
export type GitSelfHostedServer = Static<typeof GitSelfHostedServer>;

export const CreateGitSelfHostedServer = Body(
  Type.Object(
    {
      name: Name,
      provider: StringEnum(GIT_PROVIDERS),
      baseUrl: HttpUrl,
      authorizeUrl: Type.Optional(HttpUrl),
      tokenUrl: Type.Optional(HttpUrl),
      userUrl: Type.Optional(HttpUrl),
      clientId: ClientId,
      clientSecret: ClientSecret,
      scopes: Type.Optional(Type.String({ maxLength: 1024 })),
    },
    { additionalProperties: false },
  ),
);
export type CreateGitSelfHostedServer = Static<typeof CreateGitSelfHostedServer>['data'];

export const UpdateGitSelfHostedServer = Body(
  Type.Object(
    {
      name: Type.Optional(Name),
      authorizeUrl: Type.Optional(Nullable(HttpUrl)),
      tokenUrl: Type.Optional(Nullable(HttpUrl)),
      userUrl: Type.Optional(Nullable(HttpUrl)),
      clientId: Type.Optional(ClientId),
      clientSecret: Type.Optional(ClientSecret),
      scopes: Type.Optional(Type.String({ maxLength: 1024 })),
    },
    { additionalProperties: false },
  ),
);
export type UpdateGitSelfHostedServer = Static<typeof UpdateGitSelfHostedServer>['data'];

export const ServerParams = Type.Object({ gitSelfHostedServerId: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });

const ReturnTo = Type.String({
  maxLength: 2048,
  description: 'Where the browser goes at the end: a path, or a URL on PLINTH_PUBLIC_URL (default: PLINTH_PUBLIC_URL)',
});
export const ReturnQuery = Type.Object({ returnTo: Type.Optional(ReturnTo) }, { additionalProperties: false });
export type ReturnQuery = Static<typeof ReturnQuery>;

/** What the OAuth server sends back (RFC 6749 §4.1.2): a code and the state, or an error and the state. */
export const CallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 4096 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: true },
);
export type CallbackQuery = Static<typeof CallbackQuery>;

/** What GitHub sends back after an app installation. */
export const AppCallbackQuery = Type.Object(
  {
    installation_id: Type.Optional(Type.String({ maxLength: 64, pattern: '^[0-9]+$' })),
    setup_action: Type.Optional(Type.String({ maxLength: 64 })),
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 4096 })),
  },
  { additionalProperties: true },
);
export type AppCallbackQuery = Static<typeof AppCallbackQuery>;

export const GitAppInstallation = Type.Object(
  { id: Type.String(), organizationId: Type.String(), installationId: Type.String(), createdAt: UtcDateTime },
  { $id: 'GitAppInstallation', title: 'GitAppInstallation' },
);
export type GitAppInstallation = Static<typeof GitAppInstallation>;

export const GitListQuery = OrderedPaginationQuery;

/** A user's account on a self-hosted Git server, linked so that it signs them in to the web console. */
export const GitIdentity = Type.Object(
  {
    id: Type.String(),
    gitSelfHostedServerId: Type.String(),
    serverName: Type.String(),
    provider: StringEnum(GIT_PROVIDERS),
    organizationId: Type.String({ description: 'The organization whose server it is: a sign-in through it opens there' }),
    login: Type.String({ description: "The account's name on the server, as it was at the last link or sign-in" }),
    createdAt: UtcDateTime,
  },
  { $id: 'GitIdentity', title: 'GitIdentity' },
);
export type GitIdentity = Static<typeof GitIdentity>;
