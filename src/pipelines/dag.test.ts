import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findCycles, readySteps, withDescendants } from './dag.ts';

// build → (test, lint) → package → deploy; docs stands alone.
const STEPS = [
  { id: 'deploy', needs: ['package'] },
  { id: 'build' },
  { id: 'test', needs: ['build'] },
  { id: 'lint', needs: ['build'] },
  { id: 'package', needs: ['test', 'lint'] },
  { id: 'docs' },
];
const ids = (steps: { id: string }[]) => steps.map((s) => s.id);

describe('dag', () => {
  it('withDescendants gives the steps and every step that transitively needs one of them', () => {
    assert.deepEqual([...withDescendants(STEPS, ['build'])].sort(), ['build', 'deploy', 'lint', 'package', 'test']);
    assert.deepEqual([...withDescendants(STEPS, ['lint', 'docs'])].sort(), ['deploy', 'docs', 'lint', 'package']);
    assert.deepEqual([...withDescendants(STEPS, [])], []);
  });

  it('readySteps returns the independent steps together, so they can run in parallel', () => {
    assert.deepEqual(ids(readySteps(STEPS, new Set(), new Set())), ['build', 'docs']);
    assert.deepEqual(ids(readySteps(STEPS, new Set(['build']), new Set(['build', 'docs']))), ['test', 'lint']);
    assert.deepEqual(ids(readySteps(STEPS, new Set(['build', 'test']), new Set(['build', 'docs', 'test', 'lint']))), []);
    assert.deepEqual(ids(readySteps(STEPS, new Set(['build', 'test', 'lint']), new Set(['build', 'docs', 'test', 'lint']))), ['package']);
  });

  it('findCycles finds none in a DAG and one walk per cyclic component otherwise', () => {
    assert.deepEqual(findCycles(STEPS), []);
    assert.deepEqual(
      findCycles([
        { id: 'a', needs: ['b'] },
        { id: 'b', needs: ['c'] },
        { id: 'c', needs: ['a'] },
        { id: 'x', needs: ['a'] },
      ]),
      [['a', 'b', 'c', 'a']],
    );
    assert.equal(
      findCycles([
        { id: 'a', needs: ['b'] },
        { id: 'b', needs: ['a'] },
        { id: 'c', needs: ['d'] },
        { id: 'd', needs: ['c'] },
      ]).length,
      2,
    );
  });

  it('findCycles leaves self-needs and unknown needs to the validator', () => {
    assert.deepEqual(findCycles([{ id: 'a', needs: ['a', 'ghost'] }]), []);
  });
});
