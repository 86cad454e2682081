import { Type, type Static } from '@sinclair/typebox';
import { Id, UtcDateTime } from '../platform/schema.ts';

export const StateVersion = Type.Object(
  {
    id: Type.String(),
    stackId: Type.String(),
    serial: Type.Integer(),
    lineage: Type.String(),
    md5: Type.String({ description: 'MD5 of the state file, hex' }),
    sizeBytes: Type.Integer(),
    runId: Type.Optional(Type.String({ description: 'The run whose credential wrote it; absent for an API key' })),
    principalId: Type.String({ description: 'The user or service account that wrote it, or run:<runId>' }),
    createdAt: UtcDateTime,
  },
  { $id: 'StateVersion', title: 'StateVersion' },
);
export type StateVersion = Static<typeof StateVersion>;

export const StateVersionWithState = Type.Object(
  { ...StateVersion.properties, state: Type.Object({}, { additionalProperties: true, description: 'The state file (it may hold secrets)' }) },
  { $id: 'StateVersionWithState', title: 'StateVersionWithState' },
);

export const StateLock = Type.Object(
  {
    id: Type.String({ description: 'The lock ID OpenTofu chose' }),
    info: Type.Object({}, { additionalProperties: true, description: 'The lock info OpenTofu sent (Operation, Who, Created, ...)' }),
    runId: Type.Optional(Type.String()),
    principalId: Type.String(),
    createdAt: UtcDateTime,
  },
  { $id: 'StateLock', title: 'StateLock' },
);
export type StateLock = Static<typeof StateLock>;

export const StateLockStatus = Type.Object({ locked: Type.Boolean(), lock: Type.Optional(StateLock) }, { additionalProperties: false });

export const WorkspaceParams = Type.Object({ workspace: Type.String({ minLength: 1, maxLength: 80 }) }, { additionalProperties: false });
export const StateVersionParams = Type.Object({ id: Id, versionId: Id }, { additionalProperties: false });
export const StateWriteQuery = Type.Object(
  { ID: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The lock ID the writer holds' })) },
  { additionalProperties: false },
);

/** The 423 body: an ErrorBody that is also OpenTofu's lock info of the holder (the client reads its ID). */
export const StateLocked = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    requestId: Type.Optional(Type.String()),
    ID: Type.String(),
    Operation: Type.Optional(Type.String()),
    Info: Type.Optional(Type.String()),
    Who: Type.Optional(Type.String()),
    Version: Type.Optional(Type.String()),
    Created: Type.Optional(Type.String()),
    Path: Type.Optional(Type.String()),
  },
  { $id: 'StateLocked', title: 'StateLocked' },
);
