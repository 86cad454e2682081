import { Type, type Static } from '@sinclair/typebox';
import { AUDIT_ACTOR_TYPES, AUDIT_OUTCOMES } from '../platform/db/enums.ts';
import { Id, Nullable, PaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

export const AuditEvent = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    seq: Type.Integer({ description: "Position in the organization's hash chain, from 1" }),
    createdAt: UtcDateTime,
    actorType: StringEnum(AUDIT_ACTOR_TYPES, { description: 'MEMBERSHIP: a user through a membership; SERVICE_ACCOUNT; SYSTEM: Plinth itself (retention)' }),
    actorId: Type.String({ description: "The user's id, or the service account's (`retention` for SYSTEM)" }),
    apiKeyId: Nullable(Type.String({ description: 'The API key the request was made with' })),
    action: Type.String({ description: 'e.g. project.create, run.approve, state.download' }),
    resourceType: Type.String(),
    resourceId: Nullable(Type.String()),
    outcome: StringEnum(AUDIT_OUTCOMES, { description: 'DENIED: refused by a permission check; FAILURE: any other error' }),
    statusCode: Nullable(Type.Integer({ description: 'The response status, for a request that changed nothing' })),
    errorCode: Nullable(Type.String()),
    requestId: Type.String(),
    ip: Nullable(Type.String()),
    userAgent: Nullable(Type.String()),
    diff: Type.Optional(
      Type.Unknown({ description: 'The fields of the request body its route allowlists, URLs without credentials (docs/operations.md#audit-log)' }),
    ),
    prevHash: Type.String(),
    hash: Type.String({ description: 'SHA-256 over prevHash and this row (docs/operations.md#audit-log)' }),
  },
  { $id: 'AuditEvent', title: 'AuditEvent' },
);
export type AuditEvent = Static<typeof AuditEvent>;

const filters = {
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  actorId: Type.Optional(Id),
  resourceType: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  resourceId: Type.Optional(Id),
  outcome: Type.Optional(StringEnum(AUDIT_OUTCOMES)),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Only rows at or after this time' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Only rows before this time' })),
};

/** Newest first; `cursor` continues with older rows. */
export const AuditEventListQuery = Type.Object({ ...PaginationQuery.properties, ...filters }, { additionalProperties: false });
export type AuditEventListQuery = Static<typeof AuditEventListQuery>;

export const AuditExportQuery = Type.Object(filters, { additionalProperties: false });
export type AuditExportQuery = Static<typeof AuditExportQuery>;
export type AuditFilters = AuditExportQuery;

export const AuditVerification = Type.Object(
  {
    valid: Type.Boolean(),
    checked: Type.Integer({ description: 'Rows checked, oldest kept first' }),
    brokenAtSeq: Type.Optional(Type.Integer({ description: 'The first row whose hash, link or anchor does not hold, or the first one missing' })),
    reason: Type.Optional(Type.String()),
  },
  { $id: 'AuditVerification', title: 'AuditVerification' },
);
export type AuditVerification = Static<typeof AuditVerification>;

export const AuditSettings = Type.Object(
  {
    retentionDays: Type.Integer(),
    webhookUrl: Nullable(Type.String()),
    webhookSecretSet: Type.Boolean({ description: 'The signing secret is never shown' }),
    deliveredSeq: Type.Integer({ description: 'Every row up to this seq was accepted by the webhook' }),
  },
  { $id: 'AuditSettings', title: 'AuditSettings' },
);
export type AuditSettings = Static<typeof AuditSettings>;

export const AuditSettingsPatch = Type.Object(
  {
    retentionDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
    webhookUrl: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 2048, format: 'uri' }))),
    webhookSecret: Type.Optional(Type.String({ minLength: 16, maxLength: 256, writeOnly: true, description: 'Signs each delivery (HMAC-SHA256); write-only' })),
  },
  { additionalProperties: false },
);
export type AuditSettingsPatch = Static<typeof AuditSettingsPatch>;

export const AuditDelivery = Type.Object(
  {
    id: Type.String(),
    fromSeq: Type.Integer(),
    toSeq: Type.Integer(),
    attempt: Type.Integer(),
    statusCode: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    delivered: Type.Boolean(),
    createdAt: UtcDateTime,
  },
  { $id: 'AuditDelivery', title: 'AuditDelivery' },
);
export type AuditDelivery = Static<typeof AuditDelivery>;
