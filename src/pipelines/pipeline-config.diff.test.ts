import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffConfigs, escapePointerToken } from './pipeline-config.diff.ts';
import type { PipelineConfig, StepConfig } from './pipeline-config.ts';

const plan: StepConfig = { id: 'plan', name: 'Plan', type: 'script', with: { command: 'tofu plan', env: { TF_LOG: 'info' } } };
const approve: StepConfig = { id: 'approve', name: 'Approve', type: 'approval', needs: ['plan'] };
const apply: StepConfig = { id: 'apply', name: 'Apply', type: 'script', needs: ['approve'], with: { command: 'tofu apply' }, retry: { maxAttempts: 2 } };
const BASE: PipelineConfig = { steps: [plan, approve, apply] };
const withSteps = (...steps: StepConfig[]): PipelineConfig => ({ steps });

describe('diffConfigs', () => {
  it('identical configs give no ops', () => {
    assert.deepEqual(diffConfigs(BASE, structuredClone(BASE)), []);
  });

  it('a changed leaf is one op with old and new values and a human label', () => {
    assert.deepEqual(diffConfigs(BASE, withSteps(plan, approve, { ...apply, retry: { maxAttempts: 5 } })), [
      { path: '/steps/2/retry/maxAttempts', pathLabel: 'Step "Apply" › Retry › Max attempts', fromValue: 2, value: 5 },
    ]);
  });

  it('an added field omits fromValue, a removed one omits value; nested objects are walked down to leaves', () => {
    const { retry: _retry, ...applyWithoutRetry } = apply;
    assert.deepEqual(diffConfigs(BASE, withSteps({ ...plan, timeoutSeconds: 300 }, approve, applyWithoutRetry)), [
      { path: '/steps/0/timeoutSeconds', pathLabel: 'Step "Plan" › Timeout (seconds)', value: 300 },
      { path: '/steps/2/retry/maxAttempts', pathLabel: 'Step "Apply" › Retry › Max attempts', fromValue: 2 },
    ]);
  });

  it('user keys of env and variables keep their own spelling in labels', () => {
    const changed = { ...plan, with: { command: 'tofu plan', env: { TF_LOG: 'debug', maxAttempts: '1' } } };
    assert.deepEqual(diffConfigs(BASE, withSteps(changed, approve, apply)), [
      { path: '/steps/0/with/env/TF_LOG', pathLabel: 'Step "Plan" › With › Environment › TF_LOG', fromValue: 'info', value: 'debug' },
      { path: '/steps/0/with/env/maxAttempts', pathLabel: 'Step "Plan" › With › Environment › maxAttempts', value: '1' },
    ]);
  });

  it('arrays such as needs are compared whole', () => {
    assert.deepEqual(diffConfigs(BASE, withSteps(plan, approve, { ...apply, needs: ['approve', 'plan'] })), [
      { path: '/steps/2/needs', pathLabel: 'Step "Apply" › Needs', fromValue: ['approve'], value: ['approve', 'plan'] },
    ]);
  });

  it('steps are matched by id: inserting a step does not make later steps look changed', () => {
    const lint: StepConfig = { id: 'lint', name: 'Lint', type: 'script', with: { command: 'tflint' } };
    assert.deepEqual(diffConfigs(BASE, withSteps(lint, plan, approve, apply)), [{ path: '/steps/0', pathLabel: 'Step "Lint"', value: lint }]);
  });

  it('a removed step is one op pointing into the base config', () => {
    assert.deepEqual(diffConfigs(BASE, withSteps(plan, { ...apply, needs: ['plan'] })), [
      { path: '/steps/1/needs', pathLabel: 'Step "Apply" › Needs', fromValue: ['approve'], value: ['plan'] },
      { path: '/steps/1', pathLabel: 'Step "Approve"', fromValue: approve },
    ]);
  });

  it('a step that moved relative to the others carries `from`, and only that step does', () => {
    assert.deepEqual(diffConfigs(BASE, withSteps(apply, plan, approve)), [
      { path: '/steps/0', from: '/steps/2', pathLabel: 'Step "Apply" › Position', fromValue: 2, value: 0 },
    ]);
  });

  it('a renamed step is labelled with its new name', () => {
    assert.deepEqual(diffConfigs(BASE, withSteps(plan, approve, { ...apply, name: 'Apply changes' })), [
      { path: '/steps/2/name', pathLabel: 'Step "Apply changes" › Name', fromValue: 'Apply', value: 'Apply changes' },
    ]);
  });

  it('a value that changes shape (object to scalar) is one op', () => {
    const before = withSteps({ id: 'a', name: 'A', type: 'opentofu.plan', with: { variables: { size: { cpu: 1 } } } });
    const after = withSteps({ id: 'a', name: 'A', type: 'opentofu.plan', with: { variables: { size: 'large' } } });
    assert.deepEqual(diffConfigs(before, after), [
      { path: '/steps/0/with/variables/size', pathLabel: 'Step "A" › With › Variables › size', fromValue: { cpu: 1 }, value: 'large' },
    ]);
  });

  it('paths escape "~" and "/" in keys as RFC 6901 says', () => {
    assert.equal(escapePointerToken('a/b~c'), 'a~1b~0c');
    const before = withSteps({ id: 'a', name: 'A', type: 'opentofu.plan', with: { variables: {} } });
    const after = withSteps({ id: 'a', name: 'A', type: 'opentofu.plan', with: { variables: { 'path/to~x': 1 } } });
    assert.deepEqual(diffConfigs(before, after), [
      { path: '/steps/0/with/variables/path~1to~0x', pathLabel: 'Step "A" › With › Variables › path/to~x', value: 1 },
    ]);
  });
});
