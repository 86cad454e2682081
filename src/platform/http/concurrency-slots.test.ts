import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConcurrencySlots } from './concurrency-slots.ts';

const LOGS = { what: 'log streams followed', code: 'Api:StepLogs:TOO_MANY_FOLLOWERS' } as const;
const holder = (caller: string, organizationId = 'org-a') => ({ caller, organizationId });

describe('ConcurrencySlots', () => {
  it('refuses a caller past its own limit with a 429, while another caller still gets a slot', () => {
    const slots = new ConcurrencySlots({ ...LOGS, maxPerCaller: 2, maxTotal: 10 });
    const first = slots.acquire(holder('a'));
    slots.acquire(holder('a'));
    assert.throws(
      () => slots.acquire(holder('a')),
      (e: any) => e.status === 429 && e.code === 'Api:StepLogs:TOO_MANY_FOLLOWERS',
    );
    slots.acquire(holder('b'));
    first();
    first(); // giving a slot back twice frees it once
    slots.acquire(holder('a'));
    assert.throws(() => slots.acquire(holder('a')), /At most 2/);
  });

  it("refuses an organization's many callers past its limit, while another organization still gets a slot", () => {
    const slots = new ConcurrencySlots({ ...LOGS, maxPerCaller: 2, maxPerOrganization: 3, maxTotal: 10 });
    slots.acquire(holder('a'));
    const release = slots.acquire(holder('b'));
    slots.acquire(holder('c'));
    assert.throws(
      () => slots.acquire(holder('d')),
      (e: any) => e.status === 429 && /At most 3 log streams followed at once in one organization/.test(e.message) && e.metadata.limit === 3,
    );
    slots.acquire(holder('d', 'org-b'));
    release();
    slots.acquire(holder('d'));
  });

  it('refuses everyone once the process holds its total', () => {
    const slots = new ConcurrencySlots({ ...LOGS, maxPerCaller: 5, maxTotal: 3 });
    slots.acquire(holder('a'));
    slots.acquire(holder('b', 'org-b'));
    const release = slots.acquire(holder('c', 'org-c'));
    assert.throws(() => slots.acquire(holder('d', 'org-d')), /try again later/);
    release();
    slots.acquire(holder('d', 'org-d'));
  });

  it('holds a slot while its work runs and gives it back however the work ends; a refusal says when to retry', async () => {
    const slots = new ConcurrencySlots({ what: 'module publishes', code: 'Api:ModuleVersion:TOO_MANY_PUBLISHES', maxPerCaller: 1, retryAfterSeconds: 10 });
    let finish!: () => void;
    const running = slots.hold(holder('a'), () => new Promise<string>((resolve) => (finish = () => resolve('done'))));
    await assert.rejects(
      slots.hold(holder('a'), async () => assert.fail('refused work must not run')),
      (e: any) => e.status === 429 && e.retryAfterSeconds === 10 && e.metadata.limit === 1,
    );
    finish();
    assert.equal(await running, 'done');
    await assert.rejects(
      slots.hold(holder('a'), async () => {
        throw new Error('the work failed');
      }),
      /the work failed/,
    );
    assert.equal(await slots.hold(holder('a'), async () => 'again'), 'again');
  });
});
