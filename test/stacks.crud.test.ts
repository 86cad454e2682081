import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { serviceAccountCaller } from './helpers/callers.ts';
import { startEngineTestApp, type EngineTestApp } from './helpers/engine.ts';

describe('stacks', () => {
  let t: EngineTestApp;
  let projectId: string;
  let environmentId: string;
  before(async () => {
    t = await startEngineTestApp();
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'infra', name: 'Infra' } } })).body.data.id;
    environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
  });
  after(() => t.close());

  it('creating a stack creates its change and destroy pipelines with the default plan → approval → apply config', async () => {
    const res = await t.call('POST', '/stacks', {
      body: {
        data: {
          projectId,
          environmentId,
          name: 'network',
          givenId: 'network',
          source: { ref: 'main', path: 'stacks/network' },
          variables: { cidr: '10.0.0.0/16' },
        },
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const stack = res.body.data;
    assert.equal(stack.type, 'OPENTOFU');
    assert.equal(stack.organizationId, (await t.call('GET', '/auth/whoami')).body.data.organizationId);
    assert.deepEqual(stack.variables, { cidr: '10.0.0.0/16' });
    assert.equal(stack.serviceStateBackendWorkspace, `stack-${stack.id}`);
    const versions = await t.call('GET', `/pipeline-versions?pipelineId=${stack.changePipelineId}`);
    assert.deepEqual(
      versions.body.data[0].config.steps.map((s: any) => [s.id, s.type]),
      [
        ['plan', 'opentofu.plan'],
        ['approve', 'approval'],
        ['apply', 'opentofu.apply'],
      ],
    );
    assert.equal((await t.call('GET', `/pipelines/${stack.destroyPipelineId}`)).status, 200);
    assert.deepEqual((await t.call('GET', `/stacks/${stack.id}`)).body.data, stack);
  });

  it('a duplicate givenId is 409, an environment of another project is 422, a missing project is 404, a bad config 422', async () => {
    const dup = await t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'again', givenId: 'network' } } });
    assert.equal(dup.status, 409);
    const otherProject = (await t.call('POST', '/projects', { body: { data: { givenId: 'other', name: 'Other' } } })).body.data.id;
    const wrong = await t.call('POST', '/stacks', { body: { data: { projectId: otherProject, environmentId, name: 'x' } } });
    assert.equal(wrong.status, 422);
    assert.equal((await t.call('POST', '/stacks', { body: { data: { projectId: 'nope', environmentId, name: 'x' } } })).status, 404);
    const bad = await t.call('POST', '/stacks', {
      body: { data: { projectId, environmentId, name: 'x', pipelines: { change: { steps: [{ id: 'a', name: 'A', type: 'nope' }] } } } },
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.code, 'Api:PipelineConfig:INVALID');
    assert.equal((await t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'x', type: 'OPENTOFU' } } })).status, 400);
  });

  it('lists, patches and deletes stacks; a VIEWER reads but may not write', async () => {
    const created = (await t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'dns' } } })).body.data;
    const patched = await t.call('PATCH', `/stacks/${created.id}`, { body: { data: { name: 'dns-zone', variables: { ttl: 60 } } } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.data.name, 'dns-zone');
    assert.deepEqual(patched.body.data.variables, { ttl: 60 });
    const list = await t.call('GET', `/stacks?projectId=${projectId}&limit=1`);
    assert.equal(list.body.data.length, 1);
    assert.ok(list.body.meta.nextCursor);
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assert.equal((await t.call('GET', `/stacks/${created.id}`, { token: viewer.token })).status, 200);
    assert.equal((await t.call('PATCH', `/stacks/${created.id}`, { token: viewer.token, body: { data: { name: 'x' } } })).status, 403);
    assert.equal((await t.call('POST', `/stacks/${created.id}/pipeline-run`, { token: viewer.token, body: { data: {} } })).status, 403);
    assert.equal((await t.call('DELETE', `/stacks/${created.id}`)).status, 204);
    assert.equal((await t.call('GET', `/stacks/${created.id}`)).status, 404);
  });

  it('a PATCH of the source changes the fields it gives and keeps the rest, and null clears one', async () => {
    const codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'site-repo', url: 'https://git.example.com/team/site.git' } } })).body
      .data.id;
    const source = { codeSourceId, ref: 'main', path: 'infra/site', onPush: 'plan' };
    const created = (await t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'site', source } } })).body.data;
    const patch = (data: unknown) => t.call('PATCH', `/stacks/${created.id}`, { body: { data } });
    const branch = await patch({ source: { ref: 'dev' } });
    assert.equal(branch.status, 200, JSON.stringify(branch.body));
    assert.deepEqual(branch.body.data.source, { ...source, ref: 'dev' }, 'a change of branch keeps the repository, its directory and onPush');
    // onPush cleared reads as what it then is: apply.
    assert.deepEqual((await patch({ source: { path: null, onPush: null } })).body.data.source, { codeSourceId, ref: 'dev', onPush: 'apply' });
    assert.deepEqual((await patch({ name: 'site2' })).body.data.source, { codeSourceId, ref: 'dev', onPush: 'apply' }, 'a PATCH without source keeps it');
    assert.deepEqual((await patch({ source: { codeSourceId: null, ref: null } })).body.data.source, { onPush: 'apply' }, 'no code source left');
    assert.equal((await patch({ source: { ref: '' } })).status, 400);
    assert.equal((await patch({ source: { branch: 'dev' } })).status, 400);
  });

  it('a run trigger with an unknown field or action is 400; another organization sees 404', async () => {
    const stack = (await t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'edge' } } })).body.data;
    assert.equal((await t.call('POST', `/stacks/${stack.id}/pipeline-run`, { body: { data: { action: 'explode' } } })).status, 400);
    assert.equal((await t.call('POST', `/stacks/${stack.id}/pipeline-run`, { body: { data: { bogus: 1 } } })).status, 400);
    const org = await t.call('POST', '/organizations', { body: { data: { name: 'Elsewhere', billingEmail: 'b@example.com' } } });
    const headers = { 'x-organization-id': org.body.data.id };
    assert.equal((await t.call('GET', `/stacks/${stack.id}`, { headers })).status, 404);
    assert.equal((await t.call('POST', `/stacks/${stack.id}/pipeline-run`, { headers, body: { data: {} } })).status, 404);
  });

  it('a bare trigger with no body queues an apply run; a body without data is still 400', async () => {
    const stack = (await t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'bare' } } })).body.data;
    const bare = await t.call('POST', `/stacks/${stack.id}/pipeline-run`);
    assert.equal(bare.status, 201, JSON.stringify(bare.body));
    assert.equal(bare.body.data.action, 'apply');
    assert.equal(bare.body.data.status, 'QUEUED');
    assert.equal((await t.call('POST', `/stacks/${stack.id}/pipeline-run`, { body: {} })).status, 400);
  });

  it('deleting a project with stacks is 409 naming its environments, stacks and pipelines, each asked of its own domain', async () => {
    const project = (await t.call('POST', '/projects', { body: { data: { givenId: 'held', name: 'Held' } } })).body.data;
    const env = (await t.call('POST', '/environments', { body: { data: { projectId: project.id, givenId: 'dev', name: 'Dev' } } })).body.data;
    const stack = (await t.call('POST', '/stacks', { body: { data: { projectId: project.id, environmentId: env.id, name: 'db', givenId: 'db' } } })).body.data;
    const res = await t.call('DELETE', `/projects/${project.id}`);
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'Api:Project:IN_USE');
    assert.deepEqual([...res.body.details[0].items].sort(), [
      'environments: dev',
      `pipelines: ${[stack.changePipelineId, stack.destroyPipelineId].sort().join(', ')}`,
      'stacks: db',
    ]);
    const envDelete = await t.call('DELETE', `/environments/${env.id}`);
    assert.equal(envDelete.status, 409);
    assert.deepEqual(envDelete.body.details[0].items, ['stacks: db']);
    const pipelineDelete = await t.call('DELETE', `/pipelines/${stack.changePipelineId}`);
    assert.equal(pipelineDelete.status, 409);
    assert.equal(pipelineDelete.body.code, 'Api:Pipeline:IN_USE');
    assert.deepEqual(pipelineDelete.body.metadata.stackIds, [stack.id]);

    // Deleting the stack deletes its two pipelines (through the pipelines domain): then the project goes.
    assert.equal((await t.call('DELETE', `/stacks/${stack.id}`)).status, 204);
    assert.equal((await t.call('GET', `/pipelines/${stack.changePipelineId}`)).status, 404);
    assert.equal((await t.call('DELETE', `/environments/${env.id}`)).status, 204);
    assert.equal((await t.call('DELETE', `/projects/${project.id}`)).status, 204);
  });
});
