import { Type, type Static } from '@sinclair/typebox';
import {
  Body,
  Description,
  GivenId,
  Id,
  Name,
  NamedFilter,
  Nullable,
  OrderedPaginationQuery,
  SearchFilter,
  StringEnum,
  UtcDateTime,
} from '../platform/schema.ts';
import { RUN_ACTIONS, STACK_TYPES } from '../platform/db/enums.ts';
import { PipelineConfigSchema } from '../pipelines/pipelines.schema.ts';

/** What a push webhook triggers on a stack that tracks the pushed branch. */
export const PUSH_ACTIONS = ['apply', 'plan', 'none'] as const;

/** Where the stack's OpenTofu code lives: a code source, a Git ref and a path inside the repository. */
export const StackSource = Type.Object(
  {
    codeSourceId: Type.Optional(Id),
    ref: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    path: Type.Optional(Type.String({ maxLength: 1024 })),
    onPush: Type.Optional(
      StringEnum(PUSH_ACTIONS, {
        default: 'apply',
        description: 'What a push to the tracked branch (ref) that touches path triggers: an apply run, a plan run, or nothing',
      }),
    ),
  },
  { additionalProperties: false },
);
export type StackSource = Static<typeof StackSource>;

/**
 * A change to a stack's source, field by field: a field given is set, null clears it, and a field left
 * out is kept. A PATCH that sends only `ref` moves the stack to another branch of the same repository.
 */
const StackSourceChange = Type.Object(
  {
    codeSourceId: Type.Optional(Nullable(Id)),
    ref: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255 }))),
    path: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
    // An enum that takes null lists it too (OpenAPI 3.0.3), or the validator refuses null.
    onPush: Type.Optional(
      Type.Unsafe<(typeof PUSH_ACTIONS)[number] | null>({
        type: 'string',
        enum: [...PUSH_ACTIONS, null],
        nullable: true,
        description: 'What a push to the tracked branch (ref) that touches path triggers: an apply run, a plan run, or nothing; null sets it back to apply',
      }),
    ),
  },
  { additionalProperties: false, description: 'The fields of the source to change; those left out are kept, and null clears one' },
);
export type StackSourceChange = Static<typeof StackSourceChange>;

const Variables = Type.Object({}, { additionalProperties: true, description: 'OpenTofu input variables of the stack' });

export const Stack = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    projectId: Type.String(),
    environmentId: Type.String(),
    changePipelineId: Type.String(),
    destroyPipelineId: Type.String(),
    type: StringEnum(STACK_TYPES),
    name: Type.String(),
    variables: Variables,
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    givenId: Type.Optional(Type.String()),
    source: Type.Optional(StackSource),
    firstAppliedAt: Type.Optional(UtcDateTime),
    latestRunId: Type.Optional(Type.String()),
    output: Type.Optional(Type.Object({}, { additionalProperties: true })),
    serviceStateBackendWorkspace: Type.Optional(Type.String()),
    moduleInstanceId: Type.Optional(Type.String({ description: 'The module instance that owns the stack: it changes only through the instance' })),
  },
  { $id: 'Stack', title: 'Stack' },
);
export type Stack = Static<typeof Stack>;

export const CreateStack = Body(
  Type.Object(
    {
      projectId: Id,
      environmentId: Id,
      name: Name,
      givenId: Type.Optional(GivenId),
      source: Type.Optional(StackSource),
      variables: Type.Optional(Variables),
      pipelines: Type.Optional(
        Type.Object(
          { change: Type.Optional(PipelineConfigSchema), destroy: Type.Optional(PipelineConfigSchema) },
          { additionalProperties: false, description: 'Configs for version 1 of the change and destroy pipelines, instead of the defaults' },
        ),
      ),
    },
    { additionalProperties: false },
  ),
);
export type CreateStack = Static<typeof CreateStack>['data'];

export const UpdateStack = Body(
  Type.Object(
    {
      name: Type.Optional(Name),
      source: Type.Optional(StackSourceChange),
      variables: Type.Optional({ ...Variables, description: 'OpenTofu input variables of the stack: the whole set, replacing the one before' }),
    },
    { additionalProperties: false },
  ),
);
export type UpdateStack = Static<typeof UpdateStack>['data'];

export const StackListQuery = Type.Object(
  { ...OrderedPaginationQuery.properties, projectId: Type.Optional(Id), environmentId: Type.Optional(Id), ...NamedFilter, ...SearchFilter },
  { additionalProperties: false },
);
export type StackListQuery = Static<typeof StackListQuery>;

/** The body of `POST /stacks/{id}/pipeline-run`. `action` picks the pipeline and how far it goes (docs/engine.md). */
export const TriggerStackRun = Body(
  Type.Object(
    {
      description: Type.Optional(Description),
      autoapprove: Type.Optional(Type.Boolean()),
      action: Type.Optional(
        StringEnum(RUN_ACTIONS, {
          default: 'apply',
          description: 'apply: the change pipeline, every step; plan: the change pipeline up to its first approval; destroy: the destroy pipeline',
        }),
      ),
      inputs: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Run inputs, given to steps as PLINTH_INPUTS' })),
    },
    { additionalProperties: false },
  ),
);
export type TriggerStackRun = Static<typeof TriggerStackRun>['data'];
