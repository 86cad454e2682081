import { Type, type Static } from '@sinclair/typebox';
import { GIT_AUTH_TYPES, GIT_PROVIDERS } from '../platform/db/enums.ts';
import { Body, GivenId, Id, Name, NamedFilter, Nullable, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

const RepoUrl = Type.String({
  minLength: 8,
  maxLength: 2048,
  pattern: '^https?://',
  description: 'The repository over HTTP(S) smart protocol, without credentials in it',
});
const Token = Type.String({ minLength: 1, maxLength: 4096, writeOnly: true, description: 'Write-only: stored sealed, never returned' });
const WebhookSecret = Type.String({
  minLength: 16,
  maxLength: 256,
  writeOnly: true,
  description: 'Write-only: the secret push webhooks are verified with (at least 16 characters)',
});

/** A Git repository stacks check out, and how Plinth authenticates to it. Secrets are write-only. */
export const CodeSource = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    name: Type.String(),
    url: Type.String(),
    provider: StringEnum(GIT_PROVIDERS),
    authType: StringEnum(GIT_AUTH_TYPES),
    hasToken: Type.Boolean(),
    hasWebhookSecret: Type.Boolean(),
    webhookUrl: Type.String({ description: 'Where the Git server sends push events (POST)' }),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    givenId: Type.Optional(Type.String()),
    gitAppInstallationId: Type.Optional(Type.String()),
    gitSelfHostedServerId: Type.Optional(Type.String()),
  },
  { $id: 'CodeSource', title: 'CodeSource' },
);
export type CodeSource = Static<typeof CodeSource>;

export const CreateCodeSource = Body(
  Type.Object(
    {
      name: Name,
      givenId: Type.Optional(GivenId),
      url: RepoUrl,
      provider: Type.Optional(StringEnum(GIT_PROVIDERS, { default: 'GENERIC' })),
      authType: Type.Optional(
        StringEnum(GIT_AUTH_TYPES, {
          default: 'NONE',
          description: 'NONE; TOKEN (needs token); APP_INSTALLATION (needs gitAppInstallationId); OAUTH (needs gitSelfHostedServerId)',
        }),
      ),
      token: Type.Optional(Token),
      gitAppInstallationId: Type.Optional(Id),
      gitSelfHostedServerId: Type.Optional(Id),
      webhookSecret: Type.Optional(WebhookSecret),
    },
    { additionalProperties: false },
  ),
);
export type CreateCodeSource = Static<typeof CreateCodeSource>['data'];

export const UpdateCodeSource = Body(
  Type.Object(
    {
      name: Type.Optional(Name),
      url: Type.Optional(RepoUrl),
      provider: Type.Optional(StringEnum(GIT_PROVIDERS)),
      authType: Type.Optional(StringEnum(GIT_AUTH_TYPES)),
      token: Type.Optional(Nullable(Token)),
      gitAppInstallationId: Type.Optional(Nullable(Id)),
      gitSelfHostedServerId: Type.Optional(Nullable(Id)),
      webhookSecret: Type.Optional(Nullable(WebhookSecret)),
    },
    { additionalProperties: false },
  ),
);
export type UpdateCodeSource = Static<typeof UpdateCodeSource>['data'];

export const CodeSourceListQuery = Type.Object({ ...OrderedPaginationQuery.properties, ...NamedFilter }, { additionalProperties: false });
export type CodeSourceListQuery = Static<typeof CodeSourceListQuery>;

/** A branch of `GET /code-source/{id}/branches`: its `name`, with the commit its head points at. */
export const Branch = Type.Object({ name: Type.String(), commitSha: Type.String() }, { $id: 'Branch', title: 'Branch' });
