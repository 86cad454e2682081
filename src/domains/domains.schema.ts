import { Type, type Static } from '@sinclair/typebox';
import { CERTIFICATE_STATUSES, DOMAIN_EVENT_KINDS, DOMAIN_STATUSES } from '../platform/db/enums.ts';
import { Body, Id, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';

const ErrorRef = Type.Unsafe<Record<string, unknown>>({ $ref: 'ErrorBody#' });
const Region = Type.String({
  pattern: '^[a-z]{2}(-[a-z]+)+-\\d$',
  maxLength: 32,
  description: 'The AWS region the certificate is requested in (where its load balancer is)',
});

export const DnsRecord = Type.Object({ name: Type.String(), type: Type.String(), value: Type.String() });

export const CertificateIssuance = Type.Object({
  id: Type.String(),
  status: StringEnum(CERTIFICATE_STATUSES),
  certificateArn: Type.Optional(Type.String()),
  validationRecords: Type.Optional(Type.Array(DnsRecord, { description: 'The CNAME records ACM validates the certificate with: create them' })),
  notAfter: Type.Optional(UtcDateTime),
  error: Type.Optional(ErrorRef),
  createdAt: UtcDateTime,
  updatedAt: UtcDateTime,
});
export type CertificateIssuance = Static<typeof CertificateIssuance>;

export const Domain = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    moduleInstanceId: Type.String(),
    cloudAccountId: Type.Optional(Type.String()),
    hostname: Type.String(),
    region: Type.String(),
    status: StringEnum(DOMAIN_STATUSES),
    verification: Type.Object({
      recordName: Type.String(),
      recordType: Type.Literal('TXT'),
      recordValue: Type.String({ description: 'Create a TXT record at recordName with exactly this value' }),
    }),
    verifiedAt: Type.Optional(UtcDateTime),
    lastCheckMessage: Type.Optional(Type.String({ description: 'What the last look at the DNS record found' })),
    certificate: Type.Optional(CertificateIssuance),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
  },
  { $id: 'Domain', title: 'Domain' },
);
export type Domain = Static<typeof Domain>;

export const AttachDomain = Body(
  Type.Object(
    {
      moduleInstanceId: Id,
      hostname: Type.String({ minLength: 3, maxLength: 253, description: 'A DNS name, lower-case (a leading *. for a wildcard)' }),
      cloudAccountId: { ...Id, description: 'The AWS account whose ACM issues its certificate' },
      region: Type.Optional(Region),
    },
    { additionalProperties: false },
  ),
);
export type AttachDomain = Static<typeof AttachDomain>['data'];

export const DomainListQuery = Type.Object(
  { ...OrderedPaginationQuery.properties, moduleInstanceId: Type.Optional({ ...Id, description: 'Only the domains of this module instance' }) },
  { additionalProperties: false },
);
export type DomainListQuery = Static<typeof DomainListQuery>;

export const DomainEvent = Type.Object(
  {
    id: Type.String(),
    kind: StringEnum(DOMAIN_EVENT_KINDS),
    createdAt: UtcDateTime,
    data: Type.String({ description: 'A JSON document: what the step saw (the hostname, the certificate ARN, a message, …)' }),
    domainId: Type.Optional(Type.String()),
    certificateIssuanceId: Type.Optional(Type.String()),
  },
  { $id: 'DomainEvent', title: 'DomainEvent' },
);
export type DomainEvent = Static<typeof DomainEvent>;

export const DomainEventsQuery = Type.Object(
  {
    moduleInstanceId: { ...Id, description: 'The module instance whose domain and certificate events to read' },
    limit: Type.Optional(Type.Integer({ minimum: 1, description: 'How many of the most recent events (default 50, at most 200)' })),
  },
  { additionalProperties: false },
);
export type DomainEventsQuery = Static<typeof DomainEventsQuery>;
