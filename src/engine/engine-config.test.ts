import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadEngineConfig } from './engine-config.ts';

describe('the OpenTofu settings of the worker', () => {
  it('default to `tofu` on PATH and the public URL, and read PLINTH_TOFU_BIN and PLINTH_STATE_BACKEND_URL', () => {
    assert.deepEqual(loadEngineConfig({ PLINTH_SANDBOX: 'off' }).tofu, { bin: 'tofu', backendUrl: 'http://127.0.0.1:8080' });
    assert.equal(loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_PUBLIC_URL: 'https://plinth.example.com/' }).tofu.backendUrl, 'https://plinth.example.com');
    const set = loadEngineConfig({ PLINTH_SANDBOX: 'off', PLINTH_TOFU_BIN: '/opt/opentofu/tofu', PLINTH_STATE_BACKEND_URL: 'http://10.0.0.5:8080' });
    assert.deepEqual(set.tofu, { bin: '/opt/opentofu/tofu', backendUrl: 'http://10.0.0.5:8080' });
  });
});
