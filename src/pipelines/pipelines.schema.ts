import { Type, type Static } from '@sinclair/typebox';
import { Body, Description, GivenId, Id, Name, NamedFilter, Nullable, OrderedPaginationQuery, UtcDateTime } from '../platform/schema.ts';

/**
 * `config` is a free-form object at the schema level; its rules (step types, needs, cycles, `with`)
 * are checked by parsePipelineConfig, which lists every problem in one 422 instead of stopping at the
 * first one a JSON Schema would find.
 */
export const PipelineConfigSchema = Type.Object(
  {},
  { additionalProperties: true, description: 'A pipeline config: {steps: [{id, name, type, needs?, with?, retry?, timeoutSeconds?}]}; see docs/pipelines.md' },
);

export const Pipeline = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    name: Type.String(),
    latestVersion: Type.Integer({ format: 'int32', description: 'The number of the newest version' }),
    latestVersionId: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    givenId: Type.Optional(Type.String()),
    projectId: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    createdById: Type.Optional(Type.String()),
  },
  { $id: 'Pipeline', title: 'Pipeline' },
);
export type Pipeline = Static<typeof Pipeline>;

export const PipelineVersion = Type.Object(
  {
    config: PipelineConfigSchema,
    createdAt: UtcDateTime,
    id: Type.String(),
    pipelineId: Type.String(),
    updatedAt: UtcDateTime,
    version: Type.Integer({ format: 'int32' }),
    createdById: Type.Optional(Type.String()),
    organizationId: Type.Optional(Type.String()),
  },
  { $id: 'PipelineVersion', title: 'PipelineVersion' },
);
export type PipelineVersion = Static<typeof PipelineVersion>;

export const PatchOp = Type.Object(
  {
    path: Type.String({ description: 'JSON Pointer (RFC 6901) into the new config; into the base version for a removed step' }),
    from: Type.Optional(Type.String({ description: 'Where a moved step was in the base version' })),
    fromValue: Type.Optional(Type.Unknown({ description: 'The value in the base version; absent for an addition' })),
    pathLabel: Type.Optional(Type.String({ description: 'Human label, e.g. Step "Apply" › Retry › Max attempts' })),
    value: Type.Optional(Type.Unknown({ description: 'The value in the new config; absent for a removal' })),
  },
  { $id: 'PatchOp', title: 'PatchOp' },
);
export type PatchOp = Static<typeof PatchOp>;

export const PipelineVersionDryRun = Type.Object(
  {
    pipelineId: Type.String(),
    baseVersion: Type.Integer({ format: 'int32' }),
    baseVersionId: Type.String(),
    patch: Type.Array(PatchOp),
  },
  { $id: 'PipelineVersionDryRun', title: 'PipelineVersionDryRun' },
);
export type PipelineVersionDryRun = Static<typeof PipelineVersionDryRun>;

export const CreatePipeline = Body(
  Type.Object(
    {
      name: Name,
      givenId: Type.Optional(GivenId),
      projectId: Type.Optional(Id),
      description: Type.Optional(Description),
      config: PipelineConfigSchema,
    },
    { additionalProperties: false },
  ),
);
export type CreatePipeline = Static<typeof CreatePipeline>['data'];

export const UpdatePipeline = Body(
  Type.Object({ name: Type.Optional(Name), description: Type.Optional(Nullable(Description)) }, { additionalProperties: false }),
);
export type UpdatePipeline = Static<typeof UpdatePipeline>['data'];

export const CreatePipelineVersion = Body(
  Type.Object(
    {
      config: PipelineConfigSchema,
      pipelineId: Id,
      dryRun: Type.Optional(Type.Boolean({ description: 'Validate and return the patch against the latest version; create nothing' })),
    },
    { additionalProperties: false },
  ),
);
export type CreatePipelineVersion = Static<typeof CreatePipelineVersion>['data'];

export const ListPipelinesQuery = Type.Object(
  { ...OrderedPaginationQuery.properties, projectId: Type.Optional(Id), ...NamedFilter },
  { additionalProperties: false },
);
export type ListPipelinesQuery = Static<typeof ListPipelinesQuery>;

export const ListPipelineVersionsQuery = Type.Object({ ...OrderedPaginationQuery.properties, pipelineId: Type.Optional(Id) }, { additionalProperties: false });
export type ListPipelineVersionsQuery = Static<typeof ListPipelineVersionsQuery>;
