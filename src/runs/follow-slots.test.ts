import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FollowSlots } from './follow-slots.ts';

describe('FollowSlots', () => {
  it('refuses a caller past its own limit with a 429, while another caller still gets a slot', () => {
    const slots = new FollowSlots(2, 10);
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
    const slots = new FollowSlots(5, 3);
    slots.acquire('a');
    slots.acquire('b');
    const release = slots.acquire('c');
    assert.throws(() => slots.acquire('d'), /try again later/);
    release();
    slots.acquire('d');
  });
});
