import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InputProperty } from './inputs.schema.ts';
import { validateInputs, validateValue } from './validate-value.ts';

const p = (x: Record<string, unknown>) => ({ id: 'x', label: 'X', ...x }) as InputProperty;

describe('validateValue', () => {
  it('a missing value is a problem only when required', () => {
    assert.deepEqual(validateValue(p({ type: 'string' }), undefined), []);
    assert.deepEqual(validateValue(p({ type: 'string', required: true }), null), [{ path: '', message: 'is required' }]);
    assert.deepEqual(validateValue(p({ type: 'text', required: true }), ''), [{ path: '', message: 'is required' }], 'an empty text is missing');
    const patterned = p({ type: 'string', patterns: [{ pattern: '^a', message: 'starts with a' }] });
    assert.deepEqual(validateValue(patterned, ''), [], 'an empty optional string is not checked against patterns');
  });

  it('string: type, dropdown values and every failing pattern', () => {
    const prop = p({
      type: 'string',
      values: [{ value: 'a' }, { value: 'b' }],
      patterns: [
        { pattern: '^[a-z]+$', message: 'lower-case only' },
        { pattern: '^.{3,}$', message: 'at least 3 characters' },
      ],
    });
    assert.deepEqual(validateValue(prop, 5), [{ path: '', message: 'must be a string' }]);
    assert.deepEqual(validateValue(prop, 'Z'), [
      { path: '', message: 'must be one of "a", "b"' },
      { path: '', message: 'lower-case only' },
      { path: '', message: 'at least 3 characters' },
    ]);
  });

  it('text: length bounds', () => {
    const prop = p({ type: 'text', min_length: 2, max_length: 4 });
    assert.deepEqual(validateValue(prop, 'a'), [{ path: '', message: 'must be at least 2 characters' }]);
    assert.deepEqual(validateValue(prop, 'abcde'), [{ path: '', message: 'must be at most 4 characters' }]);
    assert.deepEqual(validateValue(prop, 'abc'), []);
  });

  it('number: integer, range and step', () => {
    const prop = p({ type: 'number', integer: true, min: 10, max: 100, step: 5 });
    assert.deepEqual(validateValue(prop, '5'), [{ path: '', message: 'must be a number' }]);
    assert.deepEqual(validateValue(prop, 7.5), [
      { path: '', message: 'must be an integer' },
      { path: '', message: 'must be at least 10' },
      { path: '', message: 'must be 10 plus a multiple of 5' },
    ]);
    assert.deepEqual(validateValue(prop, 25), []);
    assert.deepEqual(validateValue(p({ type: 'number', step: 0.1 }), 0.3), [], 'float steps tolerate rounding');
  });

  it('boolean', () => {
    assert.deepEqual(validateValue(p({ type: 'boolean' }), 'true'), [{ path: '', message: 'must be a boolean' }]);
  });

  it('array: counts and each item against items, with its index in the path', () => {
    const prop = p({ type: 'array', max_items: 2, items: { id: 'port', label: 'Port', type: 'number', min: 1 } });
    assert.deepEqual(validateValue(prop, [0, 'x', 3]), [
      { path: '', message: 'must have at most 2 items' },
      { path: '/0', message: 'must be at least 1' },
      { path: '/1', message: 'must be a number' },
    ]);
  });

  it('string_array: items, duplicates, options and patterns', () => {
    const prop = p({ type: 'string_array', unique: true, min_items: 1, values: [{ value: 'a' }, { value: 'b' }] });
    assert.deepEqual(validateValue(prop, []), [{ path: '', message: 'must have at least 1 items' }]);
    assert.deepEqual(validateValue(prop, ['a', 'a', 'c', 1]), [
      { path: '/1', message: 'is a duplicate' },
      { path: '/2', message: 'must be one of "a", "b"' },
      { path: '/3', message: 'must be a string' },
    ]);
  });

  it('object: every problem of every field, nested, with unknown keys and required-when-shown', () => {
    const prop = p({
      type: 'object',
      properties: [
        { id: 'engine', label: 'Engine', type: 'string', required: true },
        { id: 'iops', label: 'IOPS', type: 'number', required: true, show_when: { engine: ['io1', 'io2'] } },
        { id: 'net', label: 'Net', type: 'object', properties: [{ id: 'cidr', label: 'CIDR', type: 'string', required: true }] },
      ],
    });
    assert.deepEqual(validateValue(prop, { engine: 'gp3', net: {} }), [{ path: '/net/cidr', message: 'is required' }]);
    assert.deepEqual(validateValue(prop, { engine: 'io1', extra: 1, net: { cidr: 5 } }), [
      { path: '/extra', message: 'is not an input of this schema' },
      { path: '/iops', message: 'is required' },
      { path: '/net/cidr', message: 'must be a string' },
    ]);
    assert.deepEqual(validateValue(prop, []), [{ path: '', message: 'must be an object' }]);
  });

  it('object_map and key_value: key patterns, entry counts and values, keys escaped in the pointer', () => {
    const map = p({
      type: 'object_map',
      key_patterns: [{ pattern: '^[a-z]+$', message: 'lower-case' }],
      properties: [{ id: 'n', label: 'N', type: 'number' }],
    });
    assert.deepEqual(validateValue(map, { 'a/b': { n: 'x' }, ok: 3 }), [
      { path: '/a~1b', message: 'key: lower-case' },
      { path: '/a~1b/n', message: 'must be a number' },
      { path: '/ok', message: 'must be an object' },
    ]);
    const kv = p({ type: 'key_value', max_items: 1, value_patterns: [{ pattern: '^\\d+$', message: 'digits' }] });
    assert.deepEqual(validateValue(kv, { a: '1', b: 'x', c: 2 }), [
      { path: '', message: 'must have at most 1 entries' },
      { path: '/b', message: 'digits' },
      { path: '/c', message: 'must be a string' },
    ]);
  });

  it('object_array: each item against the fields', () => {
    const prop = p({ type: 'object_array', properties: [{ id: 'path', label: 'Path', type: 'string', required: true }] });
    assert.deepEqual(validateValue(prop, [{ path: '/' }, {}, 'x']), [
      { path: '/1/path', message: 'is required' },
      { path: '/2', message: 'must be an object' },
    ]);
  });

  it('section: like an object of its children', () => {
    const prop = p({ type: 'section', properties: [{ id: 'min', label: 'Min', type: 'number' }] });
    assert.deepEqual(validateValue(prop, { min: 'x' }), [{ path: '/min', message: 'must be a number' }]);
  });

  it('compound: the chosen kind decides the fields', () => {
    const prop = p({
      type: 'compound',
      options: [
        { value: 'managed', properties: [{ id: 'domain', label: 'Domain', type: 'string', required: true }] },
        { value: 'imported', properties: [{ id: 'arn', label: 'ARN', type: 'string', required: true }] },
      ],
    });
    assert.deepEqual(validateValue(prop, { kind: 'other' }), [{ path: '/kind', message: 'must be one of "managed", "imported"' }]);
    assert.deepEqual(validateValue(prop, { kind: 'imported', domain: 'x' }), [
      { path: '/domain', message: 'is not an input of this schema' },
      { path: '/arn', message: 'is required' },
    ]);
  });

  it('reference: a reference value naming the expected output', () => {
    const prop = p({ type: 'reference', module: 'aws-vpc', output: 'vpc_id' });
    assert.deepEqual(validateValue(prop, { module_instance_id: 'abc' }), [
      { path: '', message: 'must be a reference {"$ref": {"instance": ..., "output": "vpc_id"}}' },
    ]);
    assert.deepEqual(validateValue(prop, { $ref: { instance: 'network', output: 'subnet_ids' } }), [{ path: '/$ref/output', message: 'must be "vpc_id"' }]);
    assert.deepEqual(validateValue(prop, { $ref: { instance: 'network', output: 'vpc_id' } }), []);
  });

  it('a reference value stands in for a value of any type, at any depth', () => {
    const ref = { $ref: { instance: 'network', output: 'subnet_ids', path: '/0' } };
    assert.deepEqual(validateValue(p({ type: 'number', min: 3 }), ref), []);
    assert.deepEqual(
      validateValue(p({ type: 'object', properties: [{ id: 'subnet', label: 'Subnet', type: 'string', required: true }] }), { subnet: ref }),
      [],
    );
  });

  it('git_repository: ref required only when require_ref', () => {
    const value = { code_source_id: 'c', repository: 'acme/infra' };
    assert.deepEqual(validateValue(p({ type: 'git_repository' }), value), []);
    assert.deepEqual(validateValue(p({ type: 'git_repository', require_ref: true }), value), [{ path: '/ref', message: 'is required' }]);
    assert.deepEqual(validateValue(p({ type: 'git_repository' }), { ...value, repository: '' }), [
      { path: '/repository', message: 'must be a non-empty string' },
    ]);
  });

  it('a pattern that backtracks catastrophically elsewhere is answered at once', () => {
    const prop = p({ type: 'string', patterns: [{ pattern: '^(a|a)*$', message: 'only a' }] });
    const started = Date.now();
    const problems = validateValue(prop, 'a'.repeat(40) + '!');
    assert.ok(Date.now() - started < 1000);
    assert.deepEqual(problems, [{ path: '', message: 'only a' }]);
  });

  it('a stored pattern that cannot be compiled fails the value, never passes it', () => {
    const prop = p({ type: 'string', patterns: [{ pattern: '^(?!-)', message: 'no leading dash' }] });
    assert.deepEqual(validateValue(prop, 'ok'), [{ path: '', message: 'cannot be checked: ^(?!-) is not a valid pattern' }]);
  });

  it('validateInputs checks a module-style input set keyed by input id', () => {
    const inputs = [
      { id: 'name', label: 'Name', type: 'string', required: true },
      { id: 'size', label: 'Size', type: 'number', max: 5 },
    ] as InputProperty[];
    assert.deepEqual(validateInputs(inputs, { size: 9, other: 1 }), [
      { path: '/other', message: 'is not an input of this schema' },
      { path: '/name', message: 'is required' },
      { path: '/size', message: 'must be at most 5' },
    ]);
  });
});
