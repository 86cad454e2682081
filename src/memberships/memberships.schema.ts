import { Type, type Static } from '@sinclair/typebox';
import { ROLES } from '../platform/auth/roles.ts';
import { Body, Email, StringEnum, UtcDateTime } from '../platform/schema.ts';

export const RoleSchema = StringEnum(ROLES, { description: 'Organization role' });

export const Membership = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    email: Type.String(),
    role: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    fullName: Type.Optional(Type.String()),
    shortName: Type.Optional(Type.String()),
    invitationId: Type.Optional(Type.String()),
    invitedEmail: Type.Optional(Type.String()),
    userId: Type.Optional(Type.String()),
  },
  { $id: 'Membership', title: 'Membership' },
);
export type Membership = Static<typeof Membership>;

export const InviteMember = Body(Type.Object({ email: Email, role: RoleSchema }, { additionalProperties: false }));
export type InviteMember = Static<typeof InviteMember>['data'];

export const UpdateMembership = Body(Type.Object({ role: RoleSchema }, { additionalProperties: false }));
export type UpdateMembership = Static<typeof UpdateMembership>['data'];
