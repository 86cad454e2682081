import { Type, type Static } from '@sinclair/typebox';
import { Body, GivenId, Id, Name, NamedFilter, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';
import { INPUT_SOURCES } from './instance-inputs.ts';

const AnyJson = Type.Unknown();
const Values = Type.Object({}, { additionalProperties: true, description: 'Input values by input id; any value may be a reference value {"$ref": {...}}' });

export const REFERENCE_PROBLEMS = ['MISSING_INSTANCE', 'MISSING_OUTPUT', 'OUTPUT_NOT_APPLIED'] as const;
export type ReferenceProblem = (typeof REFERENCE_PROBLEMS)[number];

/** A problem of a reference, as instances and the module graph report it. */
export const ReferenceMessage = Type.Object({
  field: Type.String({ description: 'The output the reference consumes' }),
  producerInstanceId: Type.String({ description: "The producer's id, or the reference as written when no instance has it" }),
  refInputId: Type.String(),
  refInputPath: Type.String(),
  kind: StringEnum(REFERENCE_PROBLEMS, {
    description:
      'MISSING_INSTANCE: the producer is gone; MISSING_OUTPUT: its version declares no such output; OUTPUT_NOT_APPLIED: it has not applied the output yet',
  }),
  message: Type.String(),
});
export type ReferenceMessage = Static<typeof ReferenceMessage>;

export const InstanceReference = Type.Object({
  inputId: Type.String(),
  inputPath: Type.String({ description: 'JSON Pointer of the reference value within the inputs' }),
  instance: Type.String({ description: 'As written: an id, or a givenId in the same environment' }),
  output: Type.String(),
  path: Type.String(),
  producerInstanceId: Type.Optional(Type.String({ description: 'Absent when the producer no longer exists' })),
  messages: Type.Array(ReferenceMessage),
});

export const ResolvedInput = Type.Object({
  id: Type.String(),
  label: Type.String(),
  value: Type.Optional(AnyJson),
  hidden: Type.Optional(Type.Boolean({ description: 'A show_when condition hides it: not required, not kept' })),
  source: Type.Object({
    type: StringEnum(INPUT_SOURCES, {
      description:
        "VALUE: set on the instance; DEFAULT: the input's literal default; ENVIRONMENT, PROJECT, ORGANIZATION, DEFINITION: a default value (docs/inputs.md)",
    }),
    defaultValueDefinitionId: Type.Optional(Type.String()),
    parentId: Type.Optional(Type.String()),
    defaultValueId: Type.Optional(Type.String()),
  }),
});

export const ModuleInstance = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    projectId: Type.String(),
    environmentId: Type.String(),
    moduleDefinitionId: Type.String(),
    moduleType: Type.String(),
    moduleVersionId: Type.String(),
    version: Type.String(),
    stackId: Type.String({ description: 'The OpenTofu stack the instance owns and keeps in step' }),
    givenId: Type.String(),
    name: Type.String(),
    values: Values,
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    appliedVersionId: Type.Optional(Type.String({ description: 'The version the last successful apply deployed' })),
    appliedAt: Type.Optional(UtcDateTime),
    deletingRunId: Type.Optional(Type.String({ description: 'Set while a delete waits for its destroy run' })),
    inputs: Type.Optional(
      Type.Array(ResolvedInput, { description: 'Every input of the version: its value and where it came from (when reading one instance)' }),
    ),
    references: Type.Optional(Type.Array(InstanceReference, { description: 'Its reference values and their problems (when reading one instance)' })),
  },
  { $id: 'ModuleInstance', title: 'ModuleInstance' },
);
export type ModuleInstance = Static<typeof ModuleInstance>;

export const CreateModuleInstance = Body(
  Type.Object({ environmentId: Id, moduleVersionId: Id, givenId: GivenId, name: Name, values: Type.Optional(Values) }, { additionalProperties: false }),
);
export type CreateModuleInstance = Static<typeof CreateModuleInstance>['data'];

export const UpdateModuleInstance = Body(
  Type.Object(
    { name: Type.Optional(Name), values: Type.Optional({ ...Values, description: 'The whole set of values: inputs left out fall back to their defaults' }) },
    { additionalProperties: false },
  ),
);
export type UpdateModuleInstance = Static<typeof UpdateModuleInstance>['data'];

export const UpgradeModuleInstance = Body(
  Type.Object(
    {
      moduleVersionId: Id,
      values: Type.Optional({
        ...Values,
        description: 'Values for the new version; without them the current ones carry over (through moved_from where inputs were renamed or merged)',
      }),
    },
    { additionalProperties: false },
  ),
);
export type UpgradeModuleInstance = Static<typeof UpgradeModuleInstance>['data'];

export const ModuleInstanceListQuery = Type.Object(
  {
    ...OrderedPaginationQuery.properties,
    environmentId: Type.Optional({ ...Id, description: 'Only the instances of this environment' }),
    moduleDefinitionId: Type.Optional({ ...Id, description: 'Only the instances of this definition' }),
    ...NamedFilter,
  },
  { additionalProperties: false },
);
export type ModuleInstanceListQuery = Static<typeof ModuleInstanceListQuery>;
