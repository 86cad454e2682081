import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadEngineConfig } from './engine-config.ts';

describe('per-step log limits', () => {
  it('default to 50 MiB and 500,000 lines, and are read from PLINTH_STEP_LOG_MAX_BYTES and _LINES', () => {
    assert.deepEqual(loadEngineConfig({}).logLimits, { maxBytes: 52_428_800, maxLines: 500_000 });
    assert.deepEqual(loadEngineConfig({ PLINTH_STEP_LOG_MAX_BYTES: '5000000', PLINTH_STEP_LOG_MAX_LINES: '10' }).logLimits, {
      maxBytes: 5_000_000,
      maxLines: 10,
    });
  });

  it('refuse anything but a positive integer', () => {
    assert.throws(() => loadEngineConfig({ PLINTH_STEP_LOG_MAX_BYTES: '50MB' }), /PLINTH_STEP_LOG_MAX_BYTES must be a positive integer/);
    assert.throws(() => loadEngineConfig({ PLINTH_STEP_LOG_MAX_LINES: '0' }), /PLINTH_STEP_LOG_MAX_LINES/);
  });
});
