import { Type, type Static } from '@sinclair/typebox';
import { InputProperty, StoredInputProperty } from '../inputs/inputs.schema.ts';
import { CREATED_BY_TYPES } from '../platform/db/enums.ts';
import { Body, Description, GivenId, Name, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

export const DefaultValueDefinition = Type.Object(
  {
    id: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    organizationId: Type.String(),
    givenId: GivenId,
    name: Type.String({ minLength: 1 }),
    schema: StoredInputProperty,
    createdByType: StringEnum(CREATED_BY_TYPES, { description: 'SYSTEM definitions are seeded by Plinth and read-only to users', default: 'USER' }),
    description: Type.Optional(Type.String()),
  },
  { $id: 'DefaultValueDefinition', title: 'DefaultValueDefinition' },
);
export type DefaultValueDefinition = Static<typeof DefaultValueDefinition>;

export const CreateDefaultValueDefinition = Body(
  Type.Object({ givenId: GivenId, name: Name, schema: InputProperty, description: Type.Optional(Description) }, { additionalProperties: false }),
);
export type CreateDefaultValueDefinition = Static<typeof CreateDefaultValueDefinition>['data'];

/** PATCH of a definition: only the supplied fields change; a new schema must accept every value already stored. */
export const UpdateDefaultValueDefinition = Body(
  Type.Object({ description: Type.Optional(Description), name: Type.Optional(Name), schema: Type.Optional(InputProperty) }, { additionalProperties: false }),
);
export type UpdateDefaultValueDefinition = Static<typeof UpdateDefaultValueDefinition>['data'];

export const DefaultValueDefinitionListQuery = OrderedPaginationQuery;

export const DeleteDefaultValueDefinitionQuery = Type.Object(
  { cascade: Type.Optional(Type.Boolean({ default: false, description: 'Also delete the values of this definition (otherwise 409 while any exist)' })) },
  { additionalProperties: false },
);
export type DeleteDefaultValueDefinitionQuery = Static<typeof DeleteDefaultValueDefinitionQuery>;
