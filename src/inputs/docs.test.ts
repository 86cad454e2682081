import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import Ajv from 'ajv';
import { checkInputProperty } from './check-property.ts';
import { INPUT_TYPES, InputProperty } from './inputs.schema.ts';
import { validateValue } from './validate-value.ts';

/** docs/inputs.md pairs each ```json property block with the ```json value block after it. */
function examples() {
  const text = readFileSync(new URL('../../docs/inputs.md', import.meta.url), 'utf8');
  const blocks = [...text.matchAll(/```json (property|value)\n([\s\S]*?)```/g)].map((m) => ({ kind: m[1], json: JSON.parse(m[2]) }));
  const pairs: { property: any; value: unknown }[] = [];
  for (let i = 0; i < blocks.length; i += 2) {
    assert.equal(blocks[i].kind, 'property');
    assert.equal(blocks[i + 1]?.kind, 'value');
    pairs.push({ property: blocks[i].json, value: blocks[i + 1].json });
  }
  return pairs;
}

describe('docs/inputs.md', () => {
  const pairs = examples();
  const validateSchema = new Ajv.default({ allErrors: true, strict: false }).compile(InputProperty);

  it('shows an example of every one of the fourteen variants', () => {
    assert.deepEqual([...new Set(pairs.map((p) => p.property.type))].sort(), [...INPUT_TYPES].sort());
  });

  for (const { property, value } of pairs) {
    it(`the ${property.type} example is a valid property and its value passes the validator`, () => {
      assert.equal(validateSchema(property), true, JSON.stringify(validateSchema.errors));
      assert.deepEqual(checkInputProperty(property), []);
      assert.deepEqual(validateValue(property, value), []);
    });
  }
});
