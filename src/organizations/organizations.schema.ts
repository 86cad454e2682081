import { Type, type Static } from '@sinclair/typebox';
import { Body, Email, Name, UtcDateTime } from '../platform/schema.ts';

export const Organization = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    billingEmail: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
  },
  { $id: 'Organization', title: 'Organization' },
);
export type Organization = Static<typeof Organization>;

export const CreateOrganization = Body(Type.Object({ billingEmail: Email, name: Name }, { additionalProperties: false }));
export type CreateOrganization = Static<typeof CreateOrganization>['data'];

export const UpdateOrganization = Body(Type.Object({ billingEmail: Type.Optional(Email), name: Type.Optional(Name) }, { additionalProperties: false }));
export type UpdateOrganization = Static<typeof UpdateOrganization>['data'];
