import { Type, type Static } from '@sinclair/typebox';
import { Id, UtcDateTime } from '../platform/schema.ts';

export const User = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    globalRole: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    fullName: Type.Optional(Type.String()),
    shortName: Type.Optional(Type.String()),
  },
  { $id: 'User', title: 'User' },
);
export type User = Static<typeof User>;

export const UserAuthSettings = Type.Object(
  { hasPassword: Type.Boolean(), identityProviders: Type.Array(Type.String()) },
  { $id: 'UserAuthSettings', title: 'UserAuthSettings' },
);
export type UserAuthSettings = Static<typeof UserAuthSettings>;

export const UserIdParams = Type.Object({ userId: Id }, { additionalProperties: false });
