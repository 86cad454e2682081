import type { Executor } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import type { InputProperty } from '../inputs/inputs.schema.ts';
import { insertDefinitionIfAbsent } from './default-value-definitions.repo.ts';

/** AWS commercial regions offered by the `aws_region` dropdown. */
export const AWS_REGIONS = [
  'us-east-1',
  'us-east-2',
  'us-west-1',
  'us-west-2',
  'af-south-1',
  'ap-east-1',
  'ap-south-1',
  'ap-south-2',
  'ap-southeast-1',
  'ap-southeast-2',
  'ap-southeast-3',
  'ap-southeast-4',
  'ap-northeast-1',
  'ap-northeast-2',
  'ap-northeast-3',
  'ca-central-1',
  'ca-west-1',
  'eu-central-1',
  'eu-central-2',
  'eu-west-1',
  'eu-west-2',
  'eu-west-3',
  'eu-south-1',
  'eu-south-2',
  'eu-north-1',
  'il-central-1',
  'me-south-1',
  'me-central-1',
  'sa-east-1',
] as const;

/** The definitions every organization has from its creation on; users may set their values but not change them. */
export const SYSTEM_DEFINITIONS: { givenId: string; name: string; description: string; schema: InputProperty }[] = [
  {
    givenId: 'aws_region',
    name: 'AWS region',
    description: 'The AWS region modules deploy into unless they say otherwise',
    schema: {
      id: 'aws_region',
      label: 'AWS region',
      type: 'string',
      required: true,
      values: AWS_REGIONS.map((value) => ({ value })),
    },
  },
];

/** seedSystemDefinitions gives an organization the SYSTEM definitions it lacks; idempotent. */
export async function seedSystemDefinitions(db: Executor, organizationId: string): Promise<void> {
  for (const d of SYSTEM_DEFINITIONS) {
    await insertDefinitionIfAbsent(db, { id: newId(), organizationId, createdByType: 'SYSTEM', ...d });
  }
}
