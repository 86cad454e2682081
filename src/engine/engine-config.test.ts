import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadEngineConfig } from './engine-config.ts';

describe('the OpenTofu settings of the worker', () => {
  it('default to `tofu` on PATH and the public URL, and read PLINTH_TOFU_BIN and PLINTH_STATE_BACKEND_URL', () => {
    assert.deepEqual(loadEngineConfig({ PLINTH_SANDBOX: 'off' }).tofu, { bin: 'tofu', backendUrl: 'http://127.0.0.1:8080', lockTimeoutMs: 120_000 });
    assert.equal(loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_PUBLIC_URL: 'https://plinth.example.com/' }).tofu.backendUrl, 'https://plinth.example.com');
    const set = loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_TOFU_BIN: '/opt/opentofu/tofu', PLINTH_STATE_BACKEND_URL: 'http://10.0.0.5:8080' });
    assert.deepEqual(set.tofu, { bin: '/opt/opentofu/tofu', backendUrl: 'http://10.0.0.5:8080', lockTimeoutMs: 120_000 });
  });

  it('wait for a state lock as long as PLINTH_TOFU_LOCK_TIMEOUT_MS says, from 1 ms to a day', () => {
    assert.equal(loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_TOFU_LOCK_TIMEOUT_MS: '5000' }).tofu.lockTimeoutMs, 5000);
    assert.throws(
      () => loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_TOFU_LOCK_TIMEOUT_MS: '0' }),
      /PLINTH_TOFU_LOCK_TIMEOUT_MS must be a positive integer/,
    );
    assert.throws(
      () => loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_TOFU_LOCK_TIMEOUT_MS: '86400001' }),
      /PLINTH_TOFU_LOCK_TIMEOUT_MS must be at most 86400000/,
    );
  });
});

describe("the worker's default time limit of a step", () => {
  it('is six hours unless PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS says otherwise, within what timeoutSeconds allows', () => {
    assert.equal(loadEngineConfig({ PLINTH_SANDBOX: 'off' }).defaultStepTimeoutSeconds, 21_600);
    assert.equal(loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS: '600' }).defaultStepTimeoutSeconds, 600);
    // Past Node's largest timer (about 24.8 days) every step would time out at once: a day is the most.
    assert.throws(
      () => loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS: '3000000' }),
      /PLINTH_STEP_DEFAULT_TIMEOUT_SECONDS must be at most 86400/,
    );
  });
});
