import { Type, type Static } from '@sinclair/typebox';
import { PARENT_TYPES } from '../platform/db/enums.ts';
import { Body, Id, OrderedPaginationQuery, PaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

const AnyJson = Type.Unknown({ description: 'any JSON value accepted by the definition schema' });

export const DefaultValue = Type.Object(
  {
    id: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    organizationId: Type.String(),
    defaultValueDefinitionId: Type.String(),
    parentId: Type.String(),
    parentType: StringEnum(PARENT_TYPES, { description: 'what parentId is' }),
    value: AnyJson,
  },
  { $id: 'DefaultValue', title: 'DefaultValue' },
);
export type DefaultValue = Static<typeof DefaultValue>;

export const CreateDefaultValue = Body(
  Type.Object(
    {
      defaultValueDefinitionId: Id,
      parentId: { ...Id, description: 'an organization, project or environment of the caller’s organization' },
      value: AnyJson,
    },
    { additionalProperties: false },
  ),
);
export type CreateDefaultValue = Static<typeof CreateDefaultValue>['data'];

/** The definition and parent are fixed; only the value changes. */
export const UpdateDefaultValue = Body(Type.Object({ value: AnyJson }, { additionalProperties: false }));
export type UpdateDefaultValue = Static<typeof UpdateDefaultValue>['data'];

export const DefaultValueListQuery = Type.Object(
  {
    ...OrderedPaginationQuery.properties,
    defaultValueDefinitionId: Type.Optional({ ...Id, description: 'Only the values of this definition' }),
    parentId: Type.Optional({ ...Id, description: 'Only the values set on this organization, project or environment' }),
  },
  { additionalProperties: false },
);
export type DefaultValueListQuery = Static<typeof DefaultValueListQuery>;

export const RESOLUTION_SOURCES = ['ENVIRONMENT', 'PROJECT', 'ORGANIZATION', 'DEFINITION'] as const;

/** The effective value of one definition for an environment, and where it came from. */
export const ResolvedDefaultValue = Type.Object(
  {
    defaultValueDefinitionId: Type.String(),
    givenId: Type.String(),
    value: AnyJson,
    source: Type.Object({
      type: StringEnum(RESOLUTION_SOURCES, { description: 'DEFINITION: the literal `default` of the definition schema' }),
      parentId: Type.Optional(Type.String({ description: 'the environment, project or organization the value is set on' })),
      defaultValueId: Type.Optional(Type.String()),
    }),
  },
  { $id: 'ResolvedDefaultValue', title: 'ResolvedDefaultValue' },
);
export type ResolvedDefaultValue = Static<typeof ResolvedDefaultValue>;

export const ResolvedDefaultValueQuery = Type.Object(
  { ...PaginationQuery.properties, givenId: Type.Optional(Type.String({ maxLength: 60, description: 'Resolve only this definition' })) },
  { additionalProperties: false },
);
export type ResolvedDefaultValueQuery = Static<typeof ResolvedDefaultValueQuery>;
