import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changedSource } from './source-change.ts';

describe('a PATCH of a stack source', () => {
  const current = { codeSourceId: 'cs1', ref: 'main', path: 'infra', onPush: 'plan' as const };

  it('changes only the fields it gives, keeping the repository when only the branch changes', () => {
    assert.deepEqual(changedSource(current, { ref: 'dev' }), { codeSourceId: 'cs1', ref: 'dev', path: 'infra', onPush: 'plan' });
  });

  it('clears a field sent as null', () => {
    assert.deepEqual(changedSource(current, { path: null, onPush: null }), { codeSourceId: 'cs1', ref: 'main' });
  });

  it('starts from nothing on a stack without a source', () => {
    assert.deepEqual(changedSource(undefined, { codeSourceId: 'cs2', ref: null }), { codeSourceId: 'cs2' });
  });
});
