import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StreamSlots } from './stream-slots.ts';

const LOGS = { what: 'log streams followed', code: 'Api:StepLogs:TOO_MANY_FOLLOWERS' } as const;

describe('StreamSlots', () => {
  it('refuses a caller past its own limit with a 429, while another caller still gets a slot', () => {
    const slots = new StreamSlots({ ...LOGS, maxPerCaller: 2, maxTotal: 10 });
    const first = slots.acquire('a');
    slots.acquire('a');
    assert.throws(
      () => slots.acquire('a'),
      (e: any) => e.status === 429 && e.code === 'Api:StepLogs:TOO_MANY_FOLLOWERS',
    );
    slots.acquire('b');
    first();
    first(); // giving a slot back twice frees it once
    slots.acquire('a');
    assert.throws(() => slots.acquire('a'), /At most 2/);
  });

  it('refuses everyone once the process holds its total', () => {
    const slots = new StreamSlots({ ...LOGS, maxPerCaller: 5, maxTotal: 3 });
    slots.acquire('a');
    slots.acquire('b');
    const release = slots.acquire('c');
    assert.throws(() => slots.acquire('d'), /try again later/);
    release();
    slots.acquire('d');
  });
});
