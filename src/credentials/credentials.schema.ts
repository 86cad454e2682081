import { Type, type Static } from '@sinclair/typebox';
import { PRINCIPAL_TYPES } from '../platform/auth/principal.ts';
import { Body, Id, Name, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';
import { RoleSchema } from '../memberships/memberships.schema.ts';

export const PrincipalSchema = Type.Object(
  {
    email: Type.String(),
    globalRole: Type.String(),
    identityId: Type.String({ description: 'The API key that authenticated the request' }),
    membershipId: Type.String(),
    organizationId: Type.String(),
    organizationName: Type.String(),
    principalType: StringEnum(PRINCIPAL_TYPES),
    role: Type.String(),
    userId: Type.String({ description: "The user's id, or the service account's id" }),
    fullName: Type.Optional(Type.String()),
    shortName: Type.Optional(Type.String()),
  },
  { $id: 'Principal', title: 'Principal' },
);

export const ServiceAccount = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    name: Type.String(),
    role: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
  },
  { $id: 'ServiceAccount', title: 'ServiceAccount' },
);
export type ServiceAccount = Static<typeof ServiceAccount>;

export const CreateServiceAccount = Body(Type.Object({ name: Name, role: RoleSchema }, { additionalProperties: false }));
export type CreateServiceAccount = Static<typeof CreateServiceAccount>['data'];
export const UpdateServiceAccount = Body(Type.Object({ name: Type.Optional(Name), role: Type.Optional(RoleSchema) }, { additionalProperties: false }));
export type UpdateServiceAccount = Static<typeof UpdateServiceAccount>['data'];

const apiKeyFields = {
  id: Type.String(),
  name: Type.String(),
  organizationId: Type.String(),
  tokenPrefix: Type.String({ description: 'The first characters of the token, to tell keys apart' }),
  createdAt: UtcDateTime,
  updatedAt: UtcDateTime,
  userId: Type.Optional(Type.String()),
  serviceAccountId: Type.Optional(Type.String()),
  createdById: Type.Optional(Type.String()),
  expiresAt: Type.Optional(UtcDateTime),
  revokedAt: Type.Optional(UtcDateTime),
  organizationOnly: Type.Boolean({
    description:
      "The key acts only in its organization, with its user's membership there (a console Git sign-in's key, or one made with such a key), whatever X-Organization-Id asks",
  }),
};
export const ApiKey = Type.Object(apiKeyFields, { $id: 'ApiKey', title: 'ApiKey' });
export type ApiKey = Static<typeof ApiKey>;
export const CreatedApiKey = Type.Object(
  { ...apiKeyFields, token: Type.String({ description: 'The secret; shown only in this response' }) },
  { $id: 'CreatedApiKey', title: 'CreatedApiKey' },
);

export const CreateApiKey = Body(
  Type.Object(
    {
      name: Name,
      serviceAccountId: Type.Optional(Id),
      userId: Type.Optional({
        ...Id,
        description: "A member's user id: issues that member a key (super-administrators only), e.g. an invited user's first key",
      }),
      expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
    },
    { additionalProperties: false },
  ),
);
export type CreateApiKey = Static<typeof CreateApiKey>['data'];

export const ApiKeyListQuery = Type.Composite([OrderedPaginationQuery, Type.Object({ serviceAccountId: Type.Optional(Id) })], { additionalProperties: false });
