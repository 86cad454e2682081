import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InputProperty } from '../inputs/inputs.schema.ts';
import { carryOver, deployedValueProblems, evaluateInputs, type EvaluationContext } from './instance-inputs.ts';

const noDefaults: EvaluationContext['resolveDefaultValue'] = async () => undefined;
const evaluate = (inputs: InputProperty[], values: Record<string, unknown>, resolveDefaultValue = noDefaults) =>
  evaluateInputs({ inputs, values, resolveDefaultValue });

const cpu: InputProperty = { id: 'cpu', label: 'CPU units', type: 'number', min: 256, min_current_value: true };
const name: InputProperty = {
  id: 'name',
  label: 'Service name',
  type: 'string',
  required: true,
  immutable: true,
  patterns: [{ pattern: '^[a-z]+$', message: 'lower-case letters only' }],
};

describe('module instance inputs', () => {
  it('names every problem by input id and label, all at once', async () => {
    const { problems } = await evaluate([cpu, name, { id: 'size', label: 'Size', type: 'string', values: [{ value: 's' }, { value: 'm' }] }], {
      cpu: 1,
      name: 'Web1',
      size: 'xl',
      extra: true,
    });
    assert.deepEqual(problems.sort(), [
      '/data/values/cpu (CPU units): must be at least 256',
      '/data/values/extra: is not an input of this schema',
      '/data/values/name (Service name): lower-case letters only',
      '/data/values/size (Size): must be one of "s", "m"',
    ]);
  });

  it('requires a required input only while show_when shows it, and keeps no value of a hidden one', async () => {
    const inputs: InputProperty[] = [
      { id: 'public', label: 'Public', type: 'boolean', default: false },
      { id: 'domain', label: 'Domain', type: 'string', required: true, show_when: { public: true } },
    ];
    assert.deepEqual((await evaluate(inputs, { public: true })).problems, ['/data/values/domain (Domain): is required']);
    const hidden = await evaluate(inputs, { public: false, domain: 'example.com' });
    assert.deepEqual(hidden.problems, []);
    assert.deepEqual(hidden.kept, { public: false });
    assert.equal(hidden.resolved.find((i) => i.id === 'domain')?.hidden, true);
  });

  it('fills a missing value from the literal default, then from a default value, saying where each came from', async () => {
    const inputs: InputProperty[] = [
      { id: 'replicas', label: 'Replicas', type: 'number', default: 2 },
      { id: 'region', label: 'Region', type: 'string', default: { $defaultValue: 'aws_region' } },
      { id: 'set', label: 'Set', type: 'string' },
    ];
    const resolve: EvaluationContext['resolveDefaultValue'] = async (givenId) =>
      givenId === 'aws_region'
        ? { defaultValueDefinitionId: 'def1', givenId, value: 'eu-west-1', source: { type: 'ENVIRONMENT', parentId: 'env1', defaultValueId: 'dv1' } }
        : undefined;
    const { resolved, effective, kept } = await evaluate(inputs, { set: 'x' }, resolve);
    assert.deepEqual(effective, { replicas: 2, region: 'eu-west-1', set: 'x' });
    assert.deepEqual(kept, { set: 'x' });
    assert.deepEqual(resolved, [
      { id: 'replicas', label: 'Replicas', value: 2, source: { type: 'DEFAULT' } },
      {
        id: 'region',
        label: 'Region',
        value: 'eu-west-1',
        source: { type: 'ENVIRONMENT', defaultValueDefinitionId: 'def1', parentId: 'env1', defaultValueId: 'dv1' },
      },
      { id: 'set', label: 'Set', value: 'x', source: { type: 'VALUE' } },
    ]);
  });

  it('locks an immutable input once deployed, whatever order its keys come in, and refuses leaving it out', () => {
    assert.deepEqual(deployedValueProblems([name], { name: 'web' }, { name: 'web' }), []);
    assert.deepEqual(deployedValueProblems([name], { name: 'api' }, { name: 'web' }), [
      '/data/values/name (Service name): is immutable once deployed: it must stay "web"',
    ]);
    assert.deepEqual(deployedValueProblems([name], {}, { name: 'web' }), ['/data/values/name (Service name): is immutable once deployed: it must stay "web"']);
    const zones: InputProperty = { id: 'zones', label: 'Zones', type: 'object', immutable: true, properties: [] };
    assert.deepEqual(deployedValueProblems([zones], { zones: { az: 'b', zone: 'a' } }, { zones: { zone: 'a', az: 'b' } }), []);
    assert.deepEqual(deployedValueProblems([name], { name: 'api' }, {}), [], 'before the first deploy it may change');
  });

  it('keeps a min_current_value number from going below the deployed value', () => {
    assert.deepEqual(deployedValueProblems([cpu], { cpu: 512 }, { cpu: 1024 }), ['/data/values/cpu (CPU units): must not go below the deployed value 1024']);
    assert.deepEqual(deployedValueProblems([cpu], { cpu: 2048 }, { cpu: 1024 }), []);
  });

  it('carries a renamed immutable input over through moved_from without tripping it', () => {
    const renamed: InputProperty = { ...name, id: 'service_name', moved_from: ['name'] };
    const carried = carryOver({ name: 'web', dropped: 1 }, [renamed]);
    assert.deepEqual(carried, { service_name: 'web' });
    assert.deepEqual(deployedValueProblems([renamed], carried, { name: 'web' }), []);
    assert.deepEqual(deployedValueProblems([renamed], { service_name: 'api' }, { name: 'web' }), [
      '/data/values/service_name (Service name): is immutable once deployed: it must stay "web"',
    ]);
  });

  it('merges inputs through moved_from: the first one holding a value', async () => {
    const merged: InputProperty = { id: 'size', label: 'Size', type: 'string', moved_from: ['old_size', 'legacy_size'] };
    assert.deepEqual(carryOver({ legacy_size: 'm' }, [merged]), { size: 'm' });
  });

  it('lets a reference value stand in for any value, and lists it', async () => {
    const ref = { $ref: { instance: 'network', output: 'vpc_id' } };
    const { problems, references } = await evaluate(
      [{ id: 'vpc', label: 'VPC', type: 'string', required: true, patterns: [{ pattern: '^vpc-', message: 'a VPC id' }] }],
      {
        vpc: ref,
      },
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(references, [{ inputId: 'vpc', inputPath: '/vpc', target: { instance: 'network', output: 'vpc_id', path: '' } }]);
  });

  it('reports a malformed reference', async () => {
    const { problems } = await evaluate([{ id: 'vpc', label: 'VPC', type: 'string' }], { vpc: { $ref: { instance: '', output: 'x', path: 'no-slash' } } });
    assert.deepEqual(problems.sort(), [
      '/data/values/vpc/$ref/instance (VPC): must be a non-empty string',
      '/data/values/vpc/$ref/path (VPC): must be a JSON Pointer such as /0/id',
    ]);
  });

  it('keeps the values of a sensitive input out of the stored values and what deploys see, and shows them masked', async () => {
    const env: InputProperty = { id: 'secrets', label: 'Secrets', type: 'key_value', sensitive: true, required: true };
    const given = await evaluate([env], { secrets: { TOKEN: 'hunter2' } });
    assert.deepEqual(given.problems, []);
    assert.deepEqual(given.kept, {});
    assert.deepEqual(given.effective, {});
    assert.deepEqual(given.secrets, { secrets: { TOKEN: 'hunter2' } });
    assert.deepEqual(given.resolved, [{ id: 'secrets', label: 'Secrets', value: '(sensitive)', source: { type: 'VALUE' } }]);
    const kept = await evaluateInputs({ inputs: [env], values: {}, sealed: new Set(['secrets']), resolveDefaultValue: noDefaults });
    assert.deepEqual(kept.problems, [], 'left out, it keeps its sealed value');
    assert.equal(kept.resolved[0].value, '(sensitive)');
    const cleared = await evaluateInputs({ inputs: [env], values: { secrets: null }, sealed: new Set(['secrets']), resolveDefaultValue: noDefaults });
    assert.deepEqual(cleared.cleared, ['secrets']);
    assert.deepEqual(cleared.problems, ['/data/values/secrets (Secrets): is required']);
    assert.deepEqual((await evaluate([env], { secrets: { TOKEN: 42 } })).problems, ['/data/values/secrets/TOKEN (Secrets): must be a string']);
  });
});
