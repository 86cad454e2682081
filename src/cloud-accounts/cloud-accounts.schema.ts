import { Type, type Static } from '@sinclair/typebox';
import { CLOUD_PROVIDERS } from '../platform/db/enums.ts';
import { DEFAULT_PREVIOUS_SECRET_SECONDS, MAX_PREVIOUS_SECRET_SECONDS } from './ingest-secrets.ts';
import { Body, GivenId, Name, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

const AccountId = Type.String({ pattern: '^[0-9]{12}$', description: 'The 12-digit AWS account id' });
const RoleArn = Type.String({
  maxLength: 2048,
  pattern: '^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\\w+=,.@/-]{1,512}$',
  description: 'The IAM role Plinth assumes in that account; it must belong to accountId',
});

export const CloudAccount = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    givenId: GivenId,
    name: Type.String(),
    provider: StringEnum(CLOUD_PROVIDERS),
    accountId: Type.String(),
    roleArn: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    externalId: Type.String({
      description:
        "The sts:ExternalId Plinth sends when it assumes the role: made by Plinth, unique to this cloud account. Require it in the role's trust policy",
    }),
    ingestSecretCreatedAt: Type.Optional({
      ...UtcDateTime,
      description: 'When the current ingest secret was made (absent: the account has none yet; rotate to make one)',
    }),
    previousIngestSecretExpiresAt: Type.Optional({ ...UtcDateTime, description: 'Until when the secret before the last rotation is still accepted' }),
  },
  { $id: 'CloudAccount', title: 'CloudAccount' },
);
export type CloudAccount = Static<typeof CloudAccount>;

const IngestSecretValue = Type.String({ description: 'The secret to send with every event, in the X-Plinth-Ingest-Secret header: shown once, never again' });

/** A cloud account as its creation answers it: with its first ingest secret. */
export const CreatedCloudAccount = Type.Intersect([CloudAccount, Type.Object({ ingestSecret: IngestSecretValue })]);

export const RotateIngestSecret = Body(
  Type.Object(
    {
      previousSecretValidForSeconds: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: MAX_PREVIOUS_SECRET_SECONDS,
          default: DEFAULT_PREVIOUS_SECRET_SECONDS,
          description: 'How long the current secret stays valid beside the new one (0: it stops now)',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);
export type RotateIngestSecret = Static<typeof RotateIngestSecret>['data'];

export const RotatedIngestSecret = Type.Object({
  ingestSecret: IngestSecretValue,
  ingestSecretCreatedAt: UtcDateTime,
  previousIngestSecretExpiresAt: Type.Optional(UtcDateTime),
});

export const CreateCloudAccount = Body(Type.Object({ givenId: GivenId, name: Name, accountId: AccountId, roleArn: RoleArn }, { additionalProperties: false }));
export type CreateCloudAccount = Static<typeof CreateCloudAccount>['data'];

/** The account itself is fixed; its role may change. The external id is Plinth's and never changes. */
export const UpdateCloudAccount = Body(Type.Object({ name: Type.Optional(Name), roleArn: Type.Optional(RoleArn) }, { additionalProperties: false }));
export type UpdateCloudAccount = Static<typeof UpdateCloudAccount>['data'];

export const CloudAccountListQuery = OrderedPaginationQuery;
