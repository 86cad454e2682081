import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPlinth, PlinthApiError, unwrap, type Plinth, type PipelineConfig } from '@plinth/sdk';
import { startTestApp, type TestApp } from './helpers/app.ts';

describe('pipeline configs through the SDK, typed by the step type', () => {
  let t: TestApp;
  let plinth: Plinth;
  before(async () => {
    t = await startTestApp();
    plinth = createPlinth({ baseUrl: await t.app.listen({ host: '127.0.0.1', port: 0 }), token: t.adminToken });
  });
  after(() => t.close());

  it('a typed config is created and read back with the same steps', async () => {
    const config: PipelineConfig = {
      steps: [
        { id: 'test', name: 'Test', type: 'script', with: { command: 'npm test', env: { CI: '1' } }, retry: { maxAttempts: 2 } },
        { id: 'gate', name: 'Gate', type: 'approval', needs: ['test'], with: { message: 'Ship it?' } },
        { id: 'plan', name: 'Plan', type: 'opentofu.plan', needs: ['gate'] },
      ],
    };
    const pipeline = (await unwrap(plinth.api.POST('/pipelines', { body: { data: { name: 'Typed', config } } }))).data;
    const version = (await unwrap(plinth.api.GET('/pipeline-versions/{id}', { params: { path: { id: pipeline.latestVersionId } } }))).data;
    assert.deepEqual(version.config, config);
    const script = version.config.steps.find((s) => s.type === 'script');
    assert.equal(script?.type === 'script' ? script.with.command : undefined, 'npm test');
  });

  it('a misspelt step type does not compile, and the server still answers 422 listing the problem', async () => {
    const config: PipelineConfig = {
      // @ts-expect-error 'scirpt' is not a step type
      steps: [{ id: 'build', name: 'Build', type: 'scirpt', with: { command: 'make' } }],
    };
    const error = await unwrap(plinth.api.POST('/pipelines', { body: { data: { name: 'Broken', config } } })).catch((e: unknown) => e);
    assert.ok(error instanceof PlinthApiError);
    assert.equal(error.status, 422);
    assert.equal(error.code, 'Api:PipelineConfig:INVALID');
    assert.deepEqual(error.body.details?.[0].items, [
      'config/steps/0/type: unknown step type "scirpt" (known: approval, script, opentofu.plan, opentofu.apply, opentofu.destroy, module.deploy)',
    ]);
  });

  it("a step's `with` is typed by its type: a field of another type does not compile, and is refused", async () => {
    const config: PipelineConfig = {
      steps: [
        // @ts-expect-error an approval step takes no command
        { id: 'gate', name: 'Gate', type: 'approval', with: { command: 'true' } },
        // @ts-expect-error a script step needs its command
        { id: 'run', name: 'Run', type: 'script', with: {} },
      ],
    };
    const error = await unwrap(plinth.api.POST('/pipelines', { body: { data: { name: 'Mixed', config } } })).catch((e: unknown) => e);
    assert.ok(error instanceof PlinthApiError && error.status === 422);
    assert.deepEqual(error.body.details?.[0].items, [
      'config/steps/0/with/command: unknown field for an approval step (allowed: message)',
      'config/steps/1/with/command: is required',
    ]);
  });

  it('a config that is not an object is still a 400 of the request schema', async () => {
    const error = await unwrap(
      plinth.api.POST('/pipelines', {
        // @ts-expect-error a config is an object
        body: { data: { name: 'List', config: [] } },
      }),
    ).catch((e: unknown) => e);
    assert.ok(error instanceof PlinthApiError);
    assert.equal(error.status, 400);
    assert.equal(error.code, 'Api:Request:INVALID');
  });
});
