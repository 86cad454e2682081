import { Type, type Static } from '@sinclair/typebox';
import { Body, Id, UtcDateTime } from '../platform/schema.ts';

/** An OpenTofu variable name. */
export const VariableName = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_-]*$' });

/** A sensitive variable as the API shows it: never its value (write-only). */
export const SensitiveVariable = Type.Object(
  { name: Type.String(), stackId: Type.String(), sensitive: Type.Boolean(), createdAt: UtcDateTime, updatedAt: UtcDateTime },
  { $id: 'SensitiveVariable', title: 'SensitiveVariable' },
);
export type SensitiveVariable = Static<typeof SensitiveVariable>;

export const SensitiveVariableParams = Type.Object({ id: Id, name: VariableName }, { additionalProperties: false });

export const SetSensitiveVariable = Body(
  Type.Object(
    { value: Type.Unknown({ writeOnly: true, description: 'Any JSON value; stored sealed and never shown again' }) },
    { additionalProperties: false, required: ['value'] },
  ),
);
export type SetSensitiveVariable = Static<typeof SetSensitiveVariable>['data'];
