import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffStates } from './state-diff.ts';

const state = (resources: unknown[]) => ({ version: 4, serial: 1, lineage: 'l', resources });
const resource = (type: string, name: string, instances: unknown[], extra: Record<string, unknown> = {}) => ({
  mode: 'managed',
  type,
  name,
  instances,
  ...extra,
});

describe('diffStates', () => {
  it('lists added, removed and changed instances by address, with the attributes that differ', () => {
    const from = state([
      resource('aws_vpc', 'main', [{ attributes: { id: 'vpc-1', cidr: '10.0.0.0/16', tags: { a: 1 } } }]),
      resource('aws_s3_bucket', 'old', [{ attributes: { id: 'b' } }]),
      resource('aws_subnet', 'same', [{ attributes: { id: 's' } }]),
    ]);
    const to = state([
      resource('aws_vpc', 'main', [{ attributes: { id: 'vpc-1', cidr: '10.1.0.0/16', tags: { a: 1 } } }]),
      resource('aws_subnet', 'same', [{ attributes: { id: 's' } }]),
      resource(
        'aws_instance',
        'web',
        [
          { index_key: 0, attributes: {} },
          { index_key: 'b', attributes: {} },
        ],
        { module: 'module.app' },
      ),
      resource('aws_ami', 'ubuntu', [{ attributes: {} }], { mode: 'data' }),
    ]);
    assert.deepEqual(diffStates(from, to), [
      { address: 'aws_s3_bucket.old', change: 'removed' },
      { address: 'aws_vpc.main', change: 'changed', attributes: [{ name: 'cidr', before: '"10.0.0.0/16"', after: '"10.1.0.0/16"' }] },
      { address: 'data.aws_ami.ubuntu', change: 'added' },
      { address: 'module.app.aws_instance.web["b"]', change: 'added' },
      { address: 'module.app.aws_instance.web[0]', change: 'added' },
    ]);
  });

  it('never shows a value the state marks sensitive, in either version', () => {
    const marked = [[{ type: 'get_attr', value: 'password' }]];
    const from = state([resource('db', 'main', [{ attributes: { password: 'old-secret' } }])]);
    const to = state([resource('db', 'main', [{ attributes: { password: 'new-secret' }, sensitive_attributes: marked }])]);
    const diff = diffStates(from, to);
    assert.deepEqual(diff, [{ address: 'db.main', change: 'changed', attributes: [{ name: 'password', before: '(sensitive)', after: '(sensitive)' }] }]);
  });

  it('reads anything that is not a state as empty', () => {
    assert.deepEqual(diffStates(null, { resources: 'x' }), []);
    assert.deepEqual(diffStates(undefined, state([resource('a', 'b', [null, { attributes: 'x' }])])), [{ address: 'a.b', change: 'added' }]);
  });
});
