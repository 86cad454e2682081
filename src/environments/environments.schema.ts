import { Type, type Static } from '@sinclair/typebox';
import { Body, Description, GivenId, Id, Name, NamedFilter, Nullable, SearchFilter, OrderedPaginationQuery, UtcDateTime } from '../platform/schema.ts';

export const Environment = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    projectId: Type.String(),
    givenId: GivenId,
    name: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    description: Type.Optional(Type.String()),
    executionEnvironmentId: Type.Optional(
      Type.String({ description: 'Where runs of this environment execute; absent: the organization default (the worker host)' }),
    ),
  },
  { $id: 'Environment', title: 'Environment' },
);
export type Environment = Static<typeof Environment>;

export const CreateEnvironment = Body(
  Type.Object(
    {
      projectId: Id,
      givenId: GivenId,
      name: Name,
      description: Type.Optional(Description),
      executionEnvironmentId: Type.Optional(Id),
    },
    { additionalProperties: false },
  ),
);
export type CreateEnvironment = Static<typeof CreateEnvironment>['data'];

/** The project and givenId are fixed; `executionEnvironmentId: null` detaches the execution environment. */
export const UpdateEnvironment = Body(
  Type.Object(
    { name: Type.Optional(Name), description: Type.Optional(Description), executionEnvironmentId: Type.Optional(Nullable(Id)) },
    { additionalProperties: false },
  ),
);
export type UpdateEnvironment = Static<typeof UpdateEnvironment>['data'];

export const EnvironmentListQuery = Type.Object(
  {
    ...OrderedPaginationQuery.properties,
    projectId: Type.Optional({ ...Id, description: 'Only the environments of this project' }),
    ...NamedFilter,
    ...SearchFilter,
  },
  { additionalProperties: false },
);
export type EnvironmentListQuery = Static<typeof EnvironmentListQuery>;
