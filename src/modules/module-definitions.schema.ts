import { Type, type Static } from '@sinclair/typebox';
import { Body, Description, Name, NamedFilter, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

/** DRAFT: no version published yet; ACTIVE: at least one is. */
export const MODULE_DEFINITION_STATUSES = ['DRAFT', 'ACTIVE'] as const;
export type ModuleDefinitionStatus = (typeof MODULE_DEFINITION_STATUSES)[number];

/** `<system>/<name>` (for example `aws/ecs-service`): what the module registry serves it as, when it has that form. */
const ModuleType = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[^\\s]+$',
  description: 'Free text without spaces, such as `aws/ecs-service`. A type of the form `<system>/<name>` is also served by the module registry',
});

export const ModuleDefinition = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    name: Type.String(),
    description: Type.String(),
    status: StringEnum(MODULE_DEFINITION_STATUSES),
    global: Type.Boolean({ description: 'Published by a super-administrator for every organization; read-only to organizations' }),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    organizationId: Type.Optional(Type.String({ description: 'Absent on a global definition' })),
    latestVersion: Type.Optional(Type.String({ description: 'The newest published version' })),
    latestVersionId: Type.Optional(Type.String()),
  },
  { $id: 'ModuleDefinition', title: 'ModuleDefinition' },
);
export type ModuleDefinition = Static<typeof ModuleDefinition>;

export const CreateModuleDefinition = Body(
  Type.Object(
    {
      type: ModuleType,
      name: Name,
      description: Type.Optional(Description),
      global: Type.Optional(Type.Boolean({ default: false, description: 'Publish for every organization (super-administrators only)' })),
    },
    { additionalProperties: false },
  ),
);
export type CreateModuleDefinition = Static<typeof CreateModuleDefinition>['data'];

/** The type is fixed: instances and registry addresses name the definition by it. */
export const UpdateModuleDefinition = Body(
  Type.Object({ name: Type.Optional(Name), description: Type.Optional(Description) }, { additionalProperties: false }),
);
export type UpdateModuleDefinition = Static<typeof UpdateModuleDefinition>['data'];

export const ModuleDefinitionListQuery = Type.Object(
  {
    ...OrderedPaginationQuery.properties,
    status: Type.Optional(StringEnum(MODULE_DEFINITION_STATUSES, { description: 'DRAFT: no published version yet; ACTIVE: at least one' })),
    type: Type.Optional({ ...ModuleType, description: 'Only the definitions of exactly this type' }),
    name: NamedFilter.name,
  },
  { additionalProperties: false },
);
export type ModuleDefinitionListQuery = Static<typeof ModuleDefinitionListQuery>;
