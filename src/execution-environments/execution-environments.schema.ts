import { Type, type Static } from '@sinclair/typebox';
import { EXECUTION_ENVIRONMENT_TYPES } from '../platform/db/enums.ts';
import { Body, GivenId, Id, Name, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

/** The network fields a CLOUD environment requires and a LOCAL one must not send. */
export const CLOUD_FIELDS = ['cloudAccountId', 'region', 'vpcId', 'subnetId', 'securityGroupId'] as const;

const Region = Type.String({ pattern: '^[a-z]{2}(-[a-z]+)+-[0-9]+$', maxLength: 32, description: 'AWS region, e.g. eu-west-1' });
const VpcId = Type.String({ pattern: '^vpc-[0-9a-f]{8,17}$' });
const SubnetId = Type.String({ pattern: '^subnet-[0-9a-f]{8,17}$' });
const SecurityGroupId = Type.String({ pattern: '^sg-[0-9a-f]{8,17}$' });

const LOCAL_NOTE = 'Empty string for a LOCAL execution environment';

const EGRESS_NOTE =
  "What the steps of this environment may reach, narrowing the installation's egress policy (PLINTH_STEP_EGRESS_ALLOW and the public internet): CIDRs and host names (`*.example.com` for subdomains). A step reaches only what both allow, the state backend always. null: no narrowing; []: nothing but the state backend";
const EgressEntry = Type.String({ minLength: 1, maxLength: 253, description: 'a CIDR, an address, a host name or `*.` and a domain' });
const EgressAllow = Type.Union([Type.Array(EgressEntry, { maxItems: 64 }), Type.Null()], { description: EGRESS_NOTE });

/** Every field always present. A LOCAL environment has no network, so its network fields are "". */
export const ExecutionEnvironment = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    givenId: GivenId,
    name: Type.String(),
    type: StringEnum(EXECUTION_ENVIRONMENT_TYPES),
    cloudAccountId: Type.String({ description: LOCAL_NOTE }),
    region: Type.String({ description: LOCAL_NOTE }),
    vpcId: Type.String({ description: LOCAL_NOTE }),
    subnetId: Type.String({ description: LOCAL_NOTE }),
    securityGroupId: Type.String({ description: LOCAL_NOTE }),
    egressAllow: EgressAllow,
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
  },
  { $id: 'ExecutionEnvironment', title: 'ExecutionEnvironment' },
);
export type ExecutionEnvironment = Static<typeof ExecutionEnvironment>;

const REQUIRED_FOR_CLOUD = 'Required when type is CLOUD; must be absent when type is LOCAL';

export const CreateExecutionEnvironment = Body(
  Type.Object(
    {
      givenId: GivenId,
      name: Name,
      type: StringEnum(EXECUTION_ENVIRONMENT_TYPES),
      cloudAccountId: Type.Optional({ ...Id, description: `${REQUIRED_FOR_CLOUD}; a cloud account of the same organization` }),
      region: Type.Optional({ ...Region, description: REQUIRED_FOR_CLOUD }),
      vpcId: Type.Optional({ ...VpcId, description: REQUIRED_FOR_CLOUD }),
      subnetId: Type.Optional({ ...SubnetId, description: REQUIRED_FOR_CLOUD }),
      securityGroupId: Type.Optional({ ...SecurityGroupId, description: REQUIRED_FOR_CLOUD }),
      egressAllow: Type.Optional(EgressAllow),
    },
    { additionalProperties: false },
  ),
);
export type CreateExecutionEnvironment = Static<typeof CreateExecutionEnvironment>['data'];

/** The type is fixed at creation; a CLOUD environment may move to another account or network. */
export const UpdateExecutionEnvironment = Body(
  Type.Object(
    {
      name: Type.Optional(Name),
      cloudAccountId: Type.Optional(Id),
      region: Type.Optional(Region),
      vpcId: Type.Optional(VpcId),
      subnetId: Type.Optional(SubnetId),
      securityGroupId: Type.Optional(SecurityGroupId),
      egressAllow: Type.Optional(EgressAllow),
    },
    { additionalProperties: false },
  ),
);
export type UpdateExecutionEnvironment = Static<typeof UpdateExecutionEnvironment>['data'];

export const ExecutionEnvironmentListQuery = Type.Object(
  { ...OrderedPaginationQuery.properties, type: Type.Optional(StringEnum(EXECUTION_ENVIRONMENT_TYPES, { description: 'Only environments of this type' })) },
  { additionalProperties: false },
);
export type ExecutionEnvironmentListQuery = Static<typeof ExecutionEnvironmentListQuery>;
