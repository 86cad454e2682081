import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Ajv from 'ajv';
import { checkInputProperty } from '../inputs/check-property.ts';
import { InputProperty } from '../inputs/inputs.schema.ts';
import { validateValue } from '../inputs/validate-value.ts';
import { SYSTEM_DEFINITIONS } from './system-definitions.ts';

describe('SYSTEM definitions', () => {
  const validate = new Ajv.default({ allErrors: true, strict: false }).compile(InputProperty);

  for (const d of SYSTEM_DEFINITIONS) {
    it(`${d.givenId} has a schema the API itself would accept`, () => {
      assert.equal(validate(d.schema), true, JSON.stringify(validate.errors));
      assert.deepEqual(checkInputProperty(d.schema), []);
    });
  }

  it('aws_region accepts a real region and refuses anything else', () => {
    const region = SYSTEM_DEFINITIONS.find((d) => d.givenId === 'aws_region')!.schema;
    assert.deepEqual(validateValue(region, 'eu-west-1'), []);
    assert.equal(validateValue(region, 'eu-west-9').length, 1);
  });
});
