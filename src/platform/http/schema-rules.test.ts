import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundIntegers, INT32_MAX, INT32_MIN } from './schema-rules.ts';

describe('boundIntegers', () => {
  it('gives every integer PostgreSQL integer bounds, keeps narrower ones, follows nesting and shared objects', () => {
    const shared = { type: 'integer' };
    const schema = {
      type: 'object',
      properties: {
        a: shared,
        b: { type: 'integer', minimum: 1, maximum: 10 },
        c: { type: 'integer', maximum: 2 ** 40 },
        d: { type: 'array', items: { anyOf: [{ type: 'integer' }, { type: 'string' }] } },
        e: shared,
        f: { type: 'number' },
      },
    };
    boundIntegers(schema);
    boundIntegers(schema);
    const p = schema.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(p.a, { type: 'integer', minimum: INT32_MIN, maximum: INT32_MAX });
    assert.deepEqual(p.b, { type: 'integer', minimum: 1, maximum: 10 });
    assert.equal(p.c.maximum, INT32_MAX);
    assert.deepEqual((p.d.items as { anyOf: unknown[] }).anyOf[0], { type: 'integer', minimum: INT32_MIN, maximum: INT32_MAX });
    assert.deepEqual(p.f, { type: 'number' });
  });
});
