import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SENSITIVE_OUTPUT, SENSITIVE_VALUE, stackOutputs, summarizePlan, UNKNOWN_VALUE } from './tofu-json.ts';

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
    assert.deepEqual(summarizePlan(plan), {
      add: 2,
      change: 1,
      destroy: 1,
      changedAddresses: ['a.x', 'a.y', 'a.z'],
      resourceChanges: [
        { address: 'a.x', action: 'create', attributes: [] },
        { address: 'a.y', action: 'replace', attributes: [] },
        { address: 'a.z', action: 'update', attributes: [] },
      ],
      hasChanges: true,
    });
  });

  it('lists the attributes a change alters, hiding sensitive values and those that hold a secret, and naming unknown ones', () => {
    const plan = {
      resource_changes: [
        {
          address: 'aws_db_instance.main',
          change: {
            actions: ['update'],
            before: { id: 'db-1', size: 'small', password: 'old', tags: { env: 'prod' }, note: 'uses s3cret-token inside', same: 1 },
            after: { id: 'db-1', size: 'large', password: 'new', tags: { env: 'prod', team: 'a' }, note: 'uses s3cret-token inside!', same: 1, arn: null },
            before_sensitive: { password: true },
            after_sensitive: { password: true, tags: {} },
            after_unknown: { arn: true },
          },
        },
        { address: 'aws_s3_bucket.gone', change: { actions: ['delete'], before: { id: 'b' }, after: null } },
      ],
    };
    const summary = summarizePlan(plan, ['s3cret-token'])!;
    assert.deepEqual(summary.resourceChanges, [
      {
        address: 'aws_db_instance.main',
        action: 'update',
        attributes: [
          { name: 'arn', after: UNKNOWN_VALUE },
          { name: 'note', before: SENSITIVE_VALUE, after: SENSITIVE_VALUE },
          { name: 'password', before: SENSITIVE_VALUE, after: SENSITIVE_VALUE },
          { name: 'size', before: '"small"', after: '"large"' },
          { name: 'tags', before: '{"env":"prod"}', after: '{"env":"prod","team":"a"}' },
        ],
      },
      { address: 'aws_s3_bucket.gone', action: 'delete' },
    ]);
    assert.equal(summary.attributesTruncated, undefined);
  });

  it('hides both sides of an attribute when either is sensitive or holds a secret: a rotated secret leaks neither value', () => {
    const rotated = summarizePlan(
      { resource_changes: [{ address: 'db.main', change: { actions: ['update'], before: { password: 'old-one' }, after: { password: 'new-one' } } }] },
      ['new-one'],
    )!;
    assert.deepEqual(rotated.resourceChanges[0].attributes, [{ name: 'password', before: SENSITIVE_VALUE, after: SENSITIVE_VALUE }]);
    const marked = summarizePlan({
      resource_changes: [
        { address: 'db.main', change: { actions: ['update'], before: { token: 'a' }, after: { token: 'b' }, after_sensitive: { token: true } } },
      ],
    })!;
    assert.deepEqual(marked.resourceChanges[0].attributes, [{ name: 'token', before: SENSITIVE_VALUE, after: SENSITIVE_VALUE }]);
  });

  it('cuts long values without splitting a character, and stops listing attributes past its budget', () => {
    // The 300th character of the JSON text is the first half of the emoji.
    const long = `${'x'.repeat(298)}😀tail`;
    const one = summarizePlan({ resource_changes: [{ address: 'a.b', change: { actions: ['create'], after: { v: long } } }] })!;
    const shown = one.resourceChanges[0].attributes![0].after!;
    assert.equal(shown, `"${'x'.repeat(298)}…`);
    const many = Array.from({ length: 1200 }, (_, i) => ({ address: `a.r${i}`, change: { actions: ['create'], after: { v: 'y'.repeat(400) } } }));
    const big = summarizePlan({ resource_changes: many })!;
    assert.equal(big.attributesTruncated, true);
    assert.equal(big.resourceChanges.length, 1200, 'every change is listed');
    assert.ok(big.resourceChanges.filter((c) => c.attributes).length < 1200);
    assert.ok(JSON.stringify(big).length < 400 * 1024);
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
