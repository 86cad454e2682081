import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isRetryableDbError, withRetries } from './retry.ts';

describe('database retries', () => {
  it('treats deadlocks, serialization failures, restarts and lost connections as retryable', () => {
    for (const code of ['40P01', '40001', '57P01', '57P03', '08006', 'ECONNREFUSED', 'ECONNRESET']) assert.equal(isRetryableDbError({ code }), true, code);
    assert.equal(isRetryableDbError(new Error('Connection terminated unexpectedly')), true);
    assert.equal(isRetryableDbError({ message: 'wrapped', cause: { code: '40P01' } }), true);
  });

  it('does not retry errors that say the work itself is wrong', () => {
    for (const code of ['23505', '22P02', '42601', '23503']) assert.equal(isRetryableDbError({ code }), false, code);
    assert.equal(isRetryableDbError(new Error('boom')), false);
    assert.equal(isRetryableDbError(undefined), false);
  });

  it('retries a retryable failure until the work succeeds', async () => {
    let calls = 0;
    const result = await withRetries(
      async () => {
        calls++;
        if (calls < 3) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
        return 'done';
      },
      { initialDelayMs: 1 },
    );
    assert.equal(result, 'done');
    assert.equal(calls, 3);
  });

  it('throws a non-retryable error at once', async () => {
    let calls = 0;
    await assert.rejects(
      withRetries(async () => {
        calls++;
        throw Object.assign(new Error('duplicate key'), { code: '23505' });
      }),
      /duplicate key/,
    );
    assert.equal(calls, 1);
  });

  it('gives up once the time budget is spent', async () => {
    let calls = 0;
    const started = Date.now();
    await assert.rejects(
      withRetries(
        async () => {
          calls++;
          throw Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
        },
        { initialDelayMs: 5, maxDelayMs: 10, maxElapsedMs: 100 },
      ),
      /refused/,
    );
    assert.ok(calls > 1);
    assert.ok(Date.now() - started < 1_000);
  });
});
