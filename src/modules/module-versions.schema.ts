import { Type, type Static } from '@sinclair/typebox';
import { InputProperty, StoredInputProperty } from '../inputs/inputs.schema.ts';
import { Body, Id, OrderedPaginationQuery, UtcDateTime } from '../platform/schema.ts';

/** An output the module's OpenTofu code declares, which reference inputs of other instances consume. */
export const ModuleOutput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_-]*$', description: 'The OpenTofu output name' }),
    description: Type.Optional(Type.String({ maxLength: 4096 })),
    sensitive: Type.Optional(Type.Boolean({ default: false, description: 'Masked wherever Plinth shows it' })),
  },
  { additionalProperties: false },
);
export type ModuleOutput = Static<typeof ModuleOutput>;

/** Where a version's code is: the code source, the ref as given, the commit it resolved to when published, the directory. */
export const ModuleVersionSource = Type.Object({
  codeSourceId: Type.String(),
  ref: Type.String(),
  commitSha: Type.String(),
  path: Type.String({ description: 'Directory inside the repository; empty for its root' }),
});

export const ModuleVersion = Type.Object(
  {
    id: Type.String(),
    moduleDefinitionId: Type.String(),
    version: Type.String(),
    source: ModuleVersionSource,
    inputs: Type.Array(StoredInputProperty),
    outputs: Type.Array(ModuleOutput),
    changelog: Type.String(),
    deprecated: Type.Boolean(),
    archiveSha256: Type.String({ description: 'SHA-256 of the archive the module registry serves' }),
    createdAt: UtcDateTime,
    organizationId: Type.Optional(Type.String({ description: 'Absent on a version of a global definition' })),
    deprecatedAt: Type.Optional(UtcDateTime),
    deprecationMessage: Type.Optional(Type.String()),
    publishedById: Type.Optional(Type.String()),
  },
  { $id: 'ModuleVersion', title: 'ModuleVersion' },
);
export type ModuleVersion = Static<typeof ModuleVersion>;

export const PublishModuleVersion = Body(
  Type.Object(
    {
      moduleDefinitionId: Id,
      version: Type.String({ minLength: 1, maxLength: 128, description: 'A semantic version newer than every published one, such as 1.4.0' }),
      source: Type.Object(
        {
          codeSourceId: Id,
          ref: Type.String({ minLength: 1, maxLength: 255, description: 'Branch, tag or commit; pinned to its commit when published' }),
          path: Type.Optional(Type.String({ maxLength: 1024, description: 'Directory of the module inside the repository; default its root' })),
        },
        { additionalProperties: false },
      ),
      inputs: Type.Array(InputProperty, { maxItems: 200 }),
      outputs: Type.Optional(Type.Array(ModuleOutput, { maxItems: 200 })),
      changelog: Type.Optional(Type.String({ maxLength: 65536 })),
    },
    { additionalProperties: false },
  ),
);
export type PublishModuleVersion = Static<typeof PublishModuleVersion>['data'];

export const DeprecateModuleVersion = Body(
  Type.Object({ message: Type.Optional(Type.String({ maxLength: 4096, description: 'Why, and what to use instead' })) }, { additionalProperties: false }),
);
export type DeprecateModuleVersion = Static<typeof DeprecateModuleVersion>['data'];

export const ModuleVersionListQuery = Type.Object(
  { ...OrderedPaginationQuery.properties, moduleDefinitionId: Type.Optional({ ...Id, description: 'Only the versions of this definition' }) },
  { additionalProperties: false },
);
export type ModuleVersionListQuery = Static<typeof ModuleVersionListQuery>;
