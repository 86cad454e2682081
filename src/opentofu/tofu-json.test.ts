import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SENSITIVE_OUTPUT, stackOutputs, summarizePlan } from './tofu-json.ts';

describe('OpenTofu JSON', () => {
  it('summarizes a plan as tofu prints it: a replacement adds one and destroys one; no-op and read change nothing', () => {
    const plan = {
      resource_changes: [
        { address: 'a.x', change: { actions: ['create'] } },
        { address: 'a.y', change: { actions: ['delete', 'create'] } },
        { address: 'a.z', change: { actions: ['update'] } },
        { address: 'a.w', change: { actions: ['no-op'] } },
        { address: 'data.a.v', change: { actions: ['read'] } },
      ],
      output_changes: { o: { actions: ['no-op'] } },
    };
    assert.deepEqual(summarizePlan(plan), { add: 2, change: 1, destroy: 1, changedAddresses: ['a.x', 'a.y', 'a.z'], hasChanges: true });
  });

  it('a plan that changes only an output has changes; one that changes nothing has none; anything else is not a plan', () => {
    assert.equal(summarizePlan({ resource_changes: [], output_changes: { o: { actions: ['update'] } } })?.hasChanges, true);
    assert.equal(summarizePlan({ resource_changes: [{ address: 'a.b', change: { actions: ['no-op'] } }] })?.hasChanges, false);
    assert.equal(summarizePlan([1]), undefined);
    assert.equal(summarizePlan({ resource_changes: [{ address: 'a.b' }] }), undefined);
  });

  it('masks sensitive outputs in the stack output', () => {
    assert.deepEqual(stackOutputs({ a: { value: 1, type: 'number' }, b: { value: 's3cret', sensitive: true } }), { a: 1, b: SENSITIVE_OUTPUT });
    assert.equal(stackOutputs('nope'), undefined);
  });

  it('masks an output whose value holds a sensitive value, inside a string, a list or a map, raw or JSON-escaped', () => {
    const secrets = ['pa"ss\\word'];
    const outputs = {
      same: { value: 'pa"ss\\word' },
      inside: { value: 'user:pa"ss\\word@db' },
      nested: { value: { list: ['a', 'pa"ss\\word'] } },
      clear: { value: 'nothing here' },
      short: { value: 'xyz' },
    };
    assert.deepEqual(stackOutputs(outputs, secrets), {
      same: SENSITIVE_OUTPUT,
      inside: SENSITIVE_OUTPUT,
      nested: SENSITIVE_OUTPUT,
      clear: 'nothing here',
      short: 'xyz',
    });
  });
});
