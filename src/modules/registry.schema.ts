import { Type, type Static } from '@sinclair/typebox';
import { Id } from '../platform/schema.ts';

// The module registry protocol's own bodies (registry.service.ts), not the API's {data} envelope:
// OpenTofu reads them as they are.

/** A namespace or module name of a module registry address (registry-address's module.go). */
const REGISTRY_NAME = '^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?$';
/** A target system: lower-case letters and digits only. */
const REGISTRY_SYSTEM = '^[0-9a-z]{1,64}$';

export const RegistryDiscovery = Type.Object(
  { 'modules.v1': Type.String({ description: 'The base URL of the module registry protocol, relative to this document' }) },
  { $id: 'RegistryDiscovery', title: 'RegistryDiscovery', description: "OpenTofu's service discovery document: the services this host offers" },
);

export const RegistryModuleParams = Type.Object(
  {
    namespace: Type.String({ minLength: 1, maxLength: 64, pattern: REGISTRY_NAME, description: "The organization's id" }),
    name: Type.String({ minLength: 1, maxLength: 64, pattern: REGISTRY_NAME, description: 'The `<name>` of a definition of type `<system>/<name>`' }),
    system: Type.String({ minLength: 1, maxLength: 64, pattern: REGISTRY_SYSTEM, description: 'The `<system>` of a definition of type `<system>/<name>`' }),
  },
  { additionalProperties: false },
);
export type RegistryModuleParams = Static<typeof RegistryModuleParams>;

export const RegistryVersionParams = Type.Object(
  {
    ...RegistryModuleParams.properties,
    version: Type.String({ minLength: 1, maxLength: 128, pattern: '^[0-9A-Za-z.+-]+$', description: 'A published version, as the versions list spells it' }),
  },
  { additionalProperties: false },
);
export type RegistryVersionParams = Static<typeof RegistryVersionParams>;

export const RegistryModuleVersions = Type.Object(
  {
    modules: Type.Array(
      Type.Object({
        versions: Type.Array(Type.Object({ version: Type.String() }), { description: 'Oldest first' }),
      }),
      { description: 'One element: the module asked for' },
    ),
  },
  { $id: 'RegistryModuleVersions', title: 'RegistryModuleVersions' },
);
export type RegistryModuleVersions = Static<typeof RegistryModuleVersions>;

export const RegistryArchiveParams = Type.Object({ versionId: Id }, { additionalProperties: false });

export const RegistryArchiveQuery = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 256, description: 'The download token the download location carries' }) },
  { additionalProperties: false },
);
