import { Type, type Static } from '@sinclair/typebox';
import { CLOUD_PROVIDERS } from '../platform/db/enums.ts';
import { Body, GivenId, Name, Nullable, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

const AccountId = Type.String({ pattern: '^[0-9]{12}$', description: 'The 12-digit AWS account id' });
const RoleArn = Type.String({
  maxLength: 2048,
  pattern: '^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\\w+=,.@/-]{1,512}$',
  description: 'The IAM role Plinth assumes in that account; it must belong to accountId',
});
const ExternalId = Type.String({ minLength: 2, maxLength: 1224, pattern: '^[\\w+=,.@:/-]+$', description: 'sts:ExternalId sent when assuming the role' });

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
    externalId: Type.Optional(Type.String()),
  },
  { $id: 'CloudAccount', title: 'CloudAccount' },
);
export type CloudAccount = Static<typeof CloudAccount>;

export const CreateCloudAccount = Body(
  Type.Object({ givenId: GivenId, name: Name, accountId: AccountId, roleArn: RoleArn, externalId: Type.Optional(ExternalId) }, { additionalProperties: false }),
);
export type CreateCloudAccount = Static<typeof CreateCloudAccount>['data'];

/** The account itself is fixed; its role and external id may rotate. `externalId: null` removes it. */
export const UpdateCloudAccount = Body(
  Type.Object({ name: Type.Optional(Name), roleArn: Type.Optional(RoleArn), externalId: Type.Optional(Nullable(ExternalId)) }, { additionalProperties: false }),
);
export type UpdateCloudAccount = Static<typeof UpdateCloudAccount>['data'];

export const CloudAccountListQuery = OrderedPaginationQuery;
