import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from './ids.ts';

describe('newId', () => {
  it('makes UUIDv7 ids that only grow, even many in one millisecond', () => {
    const ids = Array.from({ length: 10_000 }, () => newId());
    for (const id of ids) assert.match(id, /^[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
    const sorted = [...ids].sort();
    assert.deepEqual(sorted, ids, 'in the order they were made');
    assert.equal(new Set(ids).size, ids.length);
  });

  it('keeps growing when the clock steps back', (t) => {
    const before = newId();
    t.mock.method(Date, 'now', () => 1_000);
    const after = [newId(), newId()];
    t.mock.restoreAll();
    assert.ok(before < after[0] && after[0] < after[1]);
    assert.ok(after[1] < newId());
  });
});
