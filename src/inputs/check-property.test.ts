import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkInputProperties, checkInputProperty, defaultValueRefsOf } from './check-property.ts';
import type { InputProperty } from './inputs.schema.ts';

const p = (x: Record<string, unknown>) => ({ id: 'x', label: 'X', ...x }) as InputProperty;

describe('checkInputProperty', () => {
  it('reports every problem with its path inside the property', () => {
    const problems = checkInputProperty(
      p({
        type: 'object',
        properties: [
          { id: 'a', label: 'A', type: 'string', patterns: [{ pattern: '^(?!-)', message: 'm' }] },
          { id: 'a', label: 'A2', type: 'number', min: 5, max: 1 },
          { id: 'b', label: 'B', type: 'boolean', show_when: { nope: true } },
          { id: 'c', label: 'C', type: 'string', values: [{ value: 'v' }, { value: 'v' }] },
        ],
      }),
    );
    assert.deepEqual(
      problems.map((x) => x.path),
      ['/properties/1/id', '/properties/0/patterns/0/pattern', '/properties/1/min', '/properties/2/show_when/nope', '/properties/3/values/1/value'],
    );
  });

  it('checks a literal default against its own property, and leaves references alone', () => {
    assert.deepEqual(checkInputProperty(p({ type: 'number', max: 3, default: 5 })), [{ path: '/default', message: 'must be at most 3' }]);
    assert.deepEqual(checkInputProperty(p({ type: 'number', max: 3, default: { $defaultValue: 'replicas' } })), []);
  });

  it('refuses nesting deeper than eight levels', () => {
    let prop: Record<string, unknown> = { id: 'leaf', label: 'L', type: 'string' };
    for (let i = 0; i < 10; i++) prop = { id: `o${i}`, label: 'O', type: 'object', properties: [prop] };
    assert.equal(checkInputProperty(prop as InputProperty).length, 1);
  });

  it('compound options must be unique and may not define "kind"', () => {
    const problems = checkInputProperty(
      p({
        type: 'compound',
        options: [
          { value: 'a', properties: [{ id: 'kind', label: 'K', type: 'string' }] },
          { value: 'a', properties: [] },
        ],
      }),
    );
    assert.deepEqual(
      problems.map((x) => x.path),
      ['/options/1/value', '/options/0/properties'],
    );
  });

  it('defaultValueRefsOf finds references at every depth', () => {
    const prop = p({
      type: 'object',
      default: { $defaultValue: 'top' },
      properties: [{ id: 'r', label: 'R', type: 'string', default: { $defaultValue: 'aws_region' } }],
    });
    assert.deepEqual(defaultValueRefsOf(prop), ['top', 'aws_region']);
  });

  it('checkInputProperties checks a list of sibling inputs', () => {
    const problems = checkInputProperties([
      { id: 'a', label: 'A', type: 'string' },
      { id: 'a', label: 'A', type: 'number', min: 2, max: 1 },
    ] as InputProperty[]);
    assert.deepEqual(
      problems.map((x) => x.path),
      ['/1/id', '/1/min'],
    );
  });
});
