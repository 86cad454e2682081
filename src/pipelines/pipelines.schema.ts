import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import {
  Body,
  Description,
  GIVEN_ID_PATTERN,
  GivenId,
  Id,
  Name,
  NamedFilter,
  Nullable,
  OrderedPaginationQuery,
  RuleChecked,
  StringEnum,
  UtcDateTime,
} from '../platform/schema.ts';
import { STEP_TYPES, type StepType } from './pipeline-config.ts';

// The pipeline config as the API documents and types it. parsePipelineConfig (pipeline-config.validate.ts)
// checks a request's config against this shape and the rules a JSON Schema cannot say (needs that name
// real steps, cycles, relative paths, variable names), listing every problem in one 422.

export const MAX_STEPS = 100;
export const MAX_ATTEMPTS = 10;
export const MAX_TIMEOUT_SECONDS = 86_400;
export const MAX_STEP_NAME_LENGTH = 255;
export const MAX_COMMAND_LENGTH = 65_536;
export const MAX_TEXT_LENGTH = 4_096;
export const MAX_PATH_LENGTH = 1_024;
export const MAX_MODULE_INSTANCE_ID_LENGTH = 64;

const RelativePath = Type.String({
  minLength: 1,
  maxLength: MAX_PATH_LENGTH,
  description: "A path relative to the run's working directory: not absolute, no `..` segment",
});
const Variables = Type.Object({}, { additionalProperties: true, description: 'OpenTofu variable names to any JSON values' });
const Environment = Type.Unsafe<Record<string, string>>({
  type: 'object',
  additionalProperties: { type: 'string' },
  description: 'Environment variable names (`^[A-Za-z_][A-Za-z0-9_]*$`) to string values',
});
const Strict = { additionalProperties: false } as const;
const TofuWith = Type.Object({ workingDirectory: Type.Optional(RelativePath), variables: Type.Optional(Variables) }, Strict);

/** The `with` of each step type; a field not listed is refused. */
export const STEP_WITH = {
  script: Type.Object(
    {
      command: Type.String({ minLength: 1, maxLength: MAX_COMMAND_LENGTH, description: "Run by the shell in the run's fresh working directory" }),
      env: Type.Optional(Environment),
      workingDirectory: Type.Optional(RelativePath),
    },
    Strict,
  ),
  approval: Type.Object({ message: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_TEXT_LENGTH, description: 'Shown to the approver' })) }, Strict),
  'opentofu.plan': TofuWith,
  'opentofu.apply': TofuWith,
  'opentofu.destroy': TofuWith,
  'module.deploy': Type.Object(
    { moduleInstanceId: Type.String({ minLength: 1, maxLength: MAX_MODULE_INSTANCE_ID_LENGTH, description: 'The module instance to deploy' }) },
    Strict,
  ),
} satisfies Record<StepType, TObject>;

/** The fields every step has besides `type` and `with`. */
const STEP_FIELDS = {
  id: Type.String({ minLength: 1, maxLength: 60, pattern: GIVEN_ID_PATTERN, description: 'Unique among the steps of the config' }),
  name: Type.String({ minLength: 1, maxLength: MAX_STEP_NAME_LENGTH, description: 'Shown in labels and step executions' }),
  needs: Type.Optional(
    Type.Array(Type.String(), { uniqueItems: true, description: 'Ids of the other steps that must succeed before this one starts; no cycle' }),
  ),
  retry: Type.Optional(
    Type.Object({ maxAttempts: Type.Integer({ minimum: 1, maximum: MAX_ATTEMPTS, description: 'Attempts in all, the first included (1: no retry)' }) }, Strict),
  ),
  timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TIMEOUT_SECONDS, description: 'An attempt running longer fails' })),
};

/** The fields a step may have, in the order problems are reported. */
export const STEP_KEYS = ['id', 'name', 'type', 'needs', 'with', 'retry', 'timeoutSeconds'] as const;

function stepSchema<T extends StepType, W extends TSchema>(type: T, withField: W, title: string) {
  return Type.Object({ ...STEP_FIELDS, type: StringEnum([type] as const), with: withField }, { ...Strict, $id: title, title });
}

export const PipelineStep = Type.Union(
  [
    // A type whose `with` has a required field requires `with`; the others may leave it out.
    stepSchema('script', STEP_WITH.script, 'ScriptStep'),
    stepSchema('approval', Type.Optional(STEP_WITH.approval), 'ApprovalStep'),
    stepSchema('opentofu.plan', Type.Optional(STEP_WITH['opentofu.plan']), 'OpenTofuPlanStep'),
    stepSchema('opentofu.apply', Type.Optional(STEP_WITH['opentofu.apply']), 'OpenTofuApplyStep'),
    stepSchema('opentofu.destroy', Type.Optional(STEP_WITH['opentofu.destroy']), 'OpenTofuDestroyStep'),
    stepSchema('module.deploy', STEP_WITH['module.deploy'], 'ModuleDeployStep'),
  ],
  { description: `A step; its \`type\` (one of ${STEP_TYPES.join(', ')}) decides the fields of its \`with\`` },
);

export const PipelineConfigSchema = RuleChecked(
  Type.Object(
    { steps: Type.Array(PipelineStep, { minItems: 1, maxItems: MAX_STEPS }) },
    {
      ...Strict,
      $id: 'PipelineConfig',
      title: 'PipelineConfig',
      description:
        'A DAG of steps (docs/pipelines.md). A config that breaks this shape or the rules beside it (needs naming steps of the config, no cycle) is a 422 Api:PipelineConfig:INVALID listing every problem',
    },
  ),
);
export type PipelineConfigBody = Static<typeof PipelineConfigSchema>;

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
