import { Type, type Static } from '@sinclair/typebox';
import { Body, Description, GivenId, Name, NamedFilter, OrderedPaginationQuery, UtcDateTime } from '../platform/schema.ts';

export const Project = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    givenId: GivenId,
    name: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    description: Type.Optional(Type.String()),
    error: Type.Optional(Type.Unsafe<Record<string, unknown>>({ $ref: 'ErrorBody#' })),
  },
  { $id: 'Project', title: 'Project' },
);
export type Project = Static<typeof Project>;

export const CreateProject = Body(Type.Object({ givenId: GivenId, name: Name, description: Type.Optional(Description) }, { additionalProperties: false }));
export type CreateProject = Static<typeof CreateProject>['data'];

/** givenId is fixed at creation: stacks, workspaces and references name projects by it. */
export const UpdateProject = Body(Type.Object({ name: Type.Optional(Name), description: Type.Optional(Description) }, { additionalProperties: false }));
export type UpdateProject = Static<typeof UpdateProject>['data'];

export const ProjectListQuery = Type.Object({ ...OrderedPaginationQuery.properties, ...NamedFilter }, { additionalProperties: false });
export type ProjectListQuery = Static<typeof ProjectListQuery>;
