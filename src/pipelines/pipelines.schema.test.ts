import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Ajv from 'ajv';
import fc from 'fast-check';
import { STEP_TYPES } from './pipeline-config.ts';
import { pipelineConfigProblems } from './pipeline-config.validate.ts';
import { PipelineConfigSchema, PipelineStep, STEP_WITH } from './pipelines.schema.ts';
import { WITH_RULES } from './step-with.validate.ts';

/** Values a field of a config may be given: valid ones and typical mistakes. */
const anyValue = fc.oneof(
  fc.constantFrom('', ' ', 'x', 'plan', 'apply', 'a/b', '../up', '/abs', 'PATH', '1bad', 'scirpt', 'script', 'approval', 'module.deploy'),
  fc.integer({ min: -2, max: 100_000 }),
  fc.constantFrom(0, 1, 3, 10, 11, 1.5, true, null),
  fc.constant({}),
  fc.constant([]),
  fc.constant(['plan']),
  fc.constant({ NAME: 'v' }),
  fc.constant({ 'bad-name': 'v' }),
  fc.constant({ NAME: 1 }),
  fc.constant({ maxAttempts: 2 }),
  fc.constant({ maxAttempts: 0 }),
);

/** Absent (`undefined`, dropped by the JSON round trip) `weight` times as often as `arb`. */
const sometimes = (arb: fc.Arbitrary<unknown>, weight = 1) => fc.oneof({ weight, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
/** `valid` six times as often as a value of anyValue. */
const mostly = (valid: fc.Arbitrary<unknown>) => fc.oneof({ weight: 6, arbitrary: valid }, { weight: 1, arbitrary: anyValue });

const VALID_WITH: Record<string, unknown> = {
  command: 'echo hi',
  env: { TF_IN_AUTOMATION: '1' },
  workingDirectory: 'infra/live',
  message: 'Check the plan',
  variables: { region: 'eu' },
  moduleInstanceId: 'mi_1',
};

/** A `with` for a step of `type`: mostly its own fields with valid values, sometimes another field. */
function withFor(type: string) {
  const schema = (STEP_WITH as Record<string, { properties: object; required?: string[] }>)[type];
  const fields = Object.keys(schema?.properties ?? {});
  const record: Record<string, fc.Arbitrary<unknown>> = { other: sometimes(fc.constantFrom(...Object.keys(VALID_WITH)), 8) };
  for (const field of fields)
    record[field] = schema.required?.includes(field) ? mostly(fc.constant(VALID_WITH[field])) : sometimes(mostly(fc.constant(VALID_WITH[field])));
  return sometimes(
    fc.record(record).map(({ other, ...fields }) => (typeof other === 'string' ? { ...fields, [other]: VALID_WITH[other] } : fields)),
    1,
  );
}

const stepArb = fc.constantFrom(...STEP_TYPES, 'scirpt').chain((type) =>
  fc.record({
    id: mostly(fc.constantFrom('plan', 'apply', 'check')),
    name: mostly(fc.constantFrom('Plan', 'Apply')),
    type: mostly(fc.constant(type)),
    needs: sometimes(mostly(fc.constantFrom(['plan'], ['apply'], [], ['plan', 'apply']))),
    with: withFor(type),
    retry: sometimes(mostly(fc.constant({ maxAttempts: 2 }))),
    timeoutSeconds: sometimes(mostly(fc.constantFrom(1, 600, 86_400))),
    extra: sometimes(anyValue, 8),
  }),
);

describe('PipelineConfigSchema, the shape the API documents', () => {
  const matchesSchema = new Ajv.default({ allErrors: true, strict: false }).compile(PipelineConfigSchema);

  it('accepts every config the validator accepts, so the document and the SDK types never refuse a valid config', () => {
    let valid = 0;
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 4 }), (steps) => {
        const config = JSON.parse(JSON.stringify({ steps }));
        if (pipelineConfigProblems(config).length > 0) return;
        valid++;
        assert.ok(matchesSchema(config), JSON.stringify(matchesSchema.errors?.slice(0, 3)));
      }),
      { numRuns: 20_000, seed: 7 },
    );
    assert.ok(valid > 1000, `only ${valid} valid configs were generated`);
  });

  it('has one step variant per step type, each with the `with` fields the validator checks', () => {
    assert.deepEqual(PipelineStep.anyOf.map((variant) => variant.properties.type.enum[0]).sort(), [...STEP_TYPES].sort());
    for (const type of STEP_TYPES) {
      const schema = STEP_WITH[type];
      const rules: Record<string, (value: unknown) => string | undefined> = WITH_RULES[type];
      assert.deepEqual(Object.keys(rules).sort(), Object.keys(schema.properties).sort(), type);
      const required = Object.keys(rules).filter((field) => rules[field](undefined) === 'is required');
      assert.deepEqual(required.sort(), [...(schema.required ?? [])].sort(), `required fields of ${type}`);
    }
  });

  it('requires `with` exactly for the step types with a required `with` field', () => {
    for (const variant of PipelineStep.anyOf) {
      const type = variant.properties.type.enum[0] as (typeof STEP_TYPES)[number];
      assert.equal(((variant.required ?? []) as string[]).includes('with'), (STEP_WITH[type].required ?? []).length > 0, type);
    }
  });
});
