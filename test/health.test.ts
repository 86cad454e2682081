import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';

describe('health and the OpenAPI document', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp()));
  after(() => t.close());

  it('GET /health answers without a credential', async () => {
    const res = await t.call('GET', '/health', { token: null });
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'ok');
    assert.equal(res.body.database, 'ok');
    assert.deepEqual(res.body.problems, []);
    // This process runs no worker: it says so rather than claiming an isolation it does not run.
    assert.equal(res.body.isolation.mode, 'no-worker');
  });
});
