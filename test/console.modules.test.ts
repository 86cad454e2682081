import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { consoleBrowser, readConsoleEvents } from './helpers/console.ts';
import { LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, publishModule } from './helpers/modules.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

describe('the console module pages', () => {
  let t: TestApp;
  let git: GitServer;
  let orgId: string;
  let cookie: string;
  let envId: string;
  let baseUrl: string;
  const ids: Record<string, string> = {};
  const { request, signIn } = consoleBrowser(() => t.app);

  before(async () => {
    t = await startTestApp();
    git = await startGitServer();
    commitModules(git);
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    cookie = (await signIn(t.adminToken)).cookie!;
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data.id;
    envId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Production' } } })).body.data.id;
    const sharedId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'shared', name: 'Shared' } } })).body.data.id;
    const [network, database, service] = [
      await publishModule(t, codeSourceId, 'network'),
      await publishModule(t, codeSourceId, 'database'),
      await publishModule(t, codeSourceId, 'service'),
    ];
    const create = async (givenId: string, versionId: string, values: Record<string, unknown>, environmentId = envId) => {
      const res = await t.call('POST', '/module-instances', { body: { data: { environmentId, moduleVersionId: versionId, givenId, name: givenId, values } } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      ids[givenId] = res.body.data.id;
    };
    const ref = (instance: string, output: string) => ({ $ref: { instance, output } });
    await create('net', network.versionId, { name: 'main' });
    await create('db', database.versionId, { vpc_id: ref(ids.net, 'vpc_id') });
    await create('shared-net', network.versionId, { name: 'shared' }, sharedId);
    await create('shared-db', database.versionId, { vpc_id: ref(ids['shared-net'], 'vpc_id') }, sharedId);
    // Nothing is applied: every reference waits for its producer's output (a problem the page shows).
    await create('api', service.versionId, { endpoint: ref(ids['shared-db'], 'endpoint') });
  });
  after(async () => {
    await t?.close();
    await git?.close();
  });

  it("draws an environment's module graph: references across environments dashed, those with a problem red, with the messages in the table", async () => {
    const page = await request('GET', `/orgs/${orgId}/environments/${envId}/modules`, { cookie });
    assert.equal(page.status, 200);
    assert.match(page.body, /<h1>Modules of Production <span class="copy-buttons">/);
    assert.ok(page.body.includes(`data-copy="${envId}"`), "the environment's id to copy");
    const svg = /<svg[\s\S]*<\/svg>/.exec(page.body)![0];
    const nodes = [...svg.matchAll(/<g class="node module ([\w ]*)"[^>]*><title>([\w-]+) \(/g)].map((m) => `${m[2]}:${m[1].trim()}`);
    assert.deepEqual(nodes.sort(), ['api:broken', 'db:broken', 'net:', 'shared-db:external']);
    const edges = [...svg.matchAll(/<path class="([\w -]+)"/g)].map((m) => m[1]);
    assert.equal(edges.length, 2);
    assert.ok(edges.includes('edge cross-env broken'), edges.join('|'));
    assert.ok(edges.includes('edge broken'), edges.join('|'));
    assert.match(page.body, /<ul class="plain-list problem"><li>[^<]+<\/li>/);
    assert.ok(page.body.includes(`href="/orgs/${orgId}/module-instances/${ids.db}"`));
    assert.match(page.body, /across environments/);
  });

  it('shows a module instance with its deployments and domain events', async () => {
    const page = await request('GET', `/orgs/${orgId}/module-instances/${ids.db}`, { cookie });
    assert.equal(page.status, 200);
    assert.match(page.body, /<h1>db /);
    assert.match(page.body, /<code>aws\/database@1.0.0<\/code>/);
    assert.ok(page.body.includes(`href="/orgs/${orgId}/environments/${envId}/modules">Production</a>`));
    assert.match(page.body, /<h2>Deployments<\/h2>/);
    assert.match(page.body, /<h2>Domain and certificate events<\/h2>/);
    assert.equal((await request('GET', `/orgs/${orgId}/module-instances/0196a3c7e1f07a2b9c3d4e5f60718293`, { cookie })).status, 404);
  });

  it("follows a module instance's domain events live: a domain attached elsewhere arrives through the page's stream", async () => {
    const pageUrl = `/orgs/${orgId}/module-instances/${ids.net}`;
    const page = await request('GET', pageUrl, { cookie });
    const shown = new RegExp(`sse-connect="${pageUrl}/live\\?v=([\\w-]+)"`).exec(page.body)?.[1];
    assert.ok(shown, 'the page is live, from the version it shows');
    const live = await readConsoleEvents(`${baseUrl}${pageUrl}/live?v=${shown}`, cookie, (e) => e.data.includes('DOMAIN_ATTACHED'), {
      onOpen: async () => {
        const account = await t.call('POST', '/cloud-accounts', {
          body: { data: { givenId: 'prod', name: 'Prod', accountId: '123456789012', roleArn: 'arn:aws:iam::123456789012:role/plinth' } },
        });
        const cloudAccountId = account.body.data.id;
        const attached = await t.call('POST', '/domains', {
          body: { data: { moduleInstanceId: ids.net, hostname: 'shop.example.com', cloudAccountId, region: 'us-west-2' } },
        });
        assert.equal(attached.status, 201, JSON.stringify(attached.body));
      },
    });
    assert.equal(live.status, 200);
    const activity = live.events.filter((e) => e.event === 'activity');
    assert.equal(activity.length, 1, 'nothing is sent until what the page shows changes');
    assert.match(activity[0]!.data, /<code>DOMAIN_ATTACHED<\/code>/);
    assert.match(activity[0]!.data, /<h2>Deployments<\/h2>/);
    const missing = await readConsoleEvents(`${baseUrl}/orgs/${orgId}/module-instances/0196a3c7e1f07a2b9c3d4e5f60718293/live`, cookie, () => false);
    assert.deepEqual(
      missing.events.map((e) => e.event),
      ['done'],
      'the stream of an instance that is not there closes at once',
    );
  });
});
