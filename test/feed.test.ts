import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { FeedPruner, followFeed, openFeed, readFeed, type FeedTarget } from '../src/feed/feed.service.ts';
import type { Principal } from '../src/platform/auth/principal.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { deploymentEvent, taskEvent, type EcsService } from './helpers/aws-events.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { seedContainerServices } from './helpers/container-services.ts';
import { ECS_ACCOUNT } from './helpers/modules.ts';
import { openSse, type SseReader } from './helpers/sse.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

const REGION = 'us-west-2';
const WEB: EcsService = { account: ECS_ACCOUNT, region: REGION, cluster: 'shop', service: 'web' };
const API: EcsService = { account: ECS_ACCOUNT, region: REGION, cluster: 'shop', service: 'api' };

describe('the live feed of deployments, their resources and domain events', () => {
  let t: TestApp;
  let git: GitServer;
  let baseUrl: string;
  let secret: string;
  let accountId: string;
  let webId: string;
  let apiId: string;
  let prodId: string;
  let version = 0;
  const readers: SseReader[] = [];

  before(async () => {
    t = await startTestApp();
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    git = await startGitServer();
    const seeded = await seedContainerServices(t, git, [WEB, { ...API, environment: 'staging' }]);
    ({ accountId, secret } = seeded);
    webId = seeded.instances.web;
    apiId = seeded.instances.api;
    prodId = seeded.environments.web;
  });
  after(async () => {
    await Promise.all(readers.map((r) => r.close()));
    await t.close();
    await git.close();
  });

  const open = async (query = '', headers: Record<string, string> = {}, token = t.adminToken) => {
    const reader = await openSse(`${baseUrl}/events/stream${query}`, { authorization: `Bearer ${token}`, ...headers });
    readers.push(reader);
    assert.equal(reader.response.status, 200);
    assert.match(reader.response.headers.get('content-type') ?? '', /text\/event-stream/);
    return reader;
  };
  const ingest = async (event: unknown) => {
    const res = await t.call('POST', `/cloud-accounts/${accountId}/events`, { token: null, headers: { 'x-plinth-ingest-secret': secret }, body: event });
    assert.ok(res.status === 200 || res.status === 202, JSON.stringify(res.body));
    return res.body.data;
  };
  const task = (service: EcsService, deploymentId: string, taskId: string, lastStatus: string) =>
    taskEvent(service, deploymentId, taskId, ++version, lastStatus);

  it('sends a deployment, its task and a domain event of the instance as they are stored, each as GET answers it', async () => {
    const opening = Date.now();
    const feed = await open(`?moduleInstanceId=${webId}`);
    // The head is sent at once, not with the first event or keep-alive (15 s later).
    assert.ok(Date.now() - opening < 5000, `the stream took ${Date.now() - opening} ms to open`);
    await ingest(deploymentEvent(WEB, 'ecs-svc/100', 'in-progress', '2026-01-01T00:00:00Z'));
    await ingest(task(WEB, 'ecs-svc/100', 'task100', 'RUNNING'));
    const domain = await t.call('POST', '/domains', { body: { data: { moduleInstanceId: webId, hostname: 'shop.example.com', cloudAccountId: accountId } } });
    assert.equal(domain.status, 201, JSON.stringify(domain.body));

    const attached = await feed.next((e) => e.event === 'domain-event' && e.data.kind === 'DOMAIN_ATTACHED');
    assert.equal(attached.data.domainId, domain.body.data.id);
    // The task's event changed the deployment too (the task definition it runs): its last event is as GET answers.
    const deployment = feed.received.filter((e) => e.event === 'deployment').at(-1)!;
    assert.deepEqual(deployment.data, (await t.call('GET', `/deployments/${deployment.data.id}`)).body.data);
    assert.equal(deployment.data.moduleInstanceId, webId);
    const resource = await feed.next((e) => e.event === 'deployment-resource');
    assert.equal(resource.data.data.taskArn, `arn:aws:ecs:${REGION}:${ECS_ACCOUNT}:task/shop/task100`);
    assert.deepEqual(resource.data, (await t.call('GET', `/deployment-resources/${resource.data.id}`)).body.data.data);
    // Ids grow with each event sent, as numbers: (transaction id, seq).
    const ids = feed.received.map((e) => e.id!.split('-').map(BigInt));
    for (let i = 1; i < ids.length; i++) {
      const [[x0, s0], [x1, s1]] = [ids[i - 1], ids[i]];
      assert.ok(x1 > x0 || (x1 === x0 && s1 > s0), `${ids[i - 1]} then ${ids[i]}`);
    }
  });

  it('keeps to its filter: an instance, or an environment, and never another organization', async () => {
    const byInstance = await open(`?moduleInstanceId=${apiId}`);
    const byEnvironment = await open(`?environmentId=${prodId}`);
    const viewerOfOther = await serviceAccountCaller(t, 'VIEWER', await createOrganization(t, 'Feed other'));
    const otherOrg = await open('', {}, viewerOfOther.token);
    await ingest(task(WEB, 'ecs-svc/100', 'task101', 'RUNNING'));
    await ingest(task(API, 'ecs-svc/200', 'task200', 'RUNNING'));
    const api = await byInstance.next((e) => e.event === 'deployment-resource');
    assert.match(api.data.data.taskArn, /task200$/);
    const prod = await byEnvironment.next((e) => e.event === 'deployment-resource');
    assert.match(prod.data.data.taskArn, /task101$/);
    // Both tasks were stored before this one: whatever either stream was to send has been sent by now.
    await ingest(task(API, 'ecs-svc/200', 'task201', 'RUNNING'));
    await byInstance.next((e) => e.event === 'deployment-resource' && e.data.data.taskArn.endsWith('task201'));
    assert.ok(byInstance.received.every((e) => e.data.moduleInstanceId === apiId));
    assert.ok(byEnvironment.received.every((e) => e.data.moduleInstanceId === webId));
    assert.deepEqual(otherOrg.received, []);
  });

  it('resumes after Last-Event-ID with everything after it, and starts from now without one', async () => {
    const first = await open(`?moduleInstanceId=${webId}`);
    await ingest(task(WEB, 'ecs-svc/100', 'task300', 'PROVISIONING'));
    const a = await first.next((e) => e.data.data?.taskArn?.endsWith('task300'));
    await first.close();
    await ingest(task(WEB, 'ecs-svc/100', 'task301', 'PROVISIONING'));
    await ingest(task(WEB, 'ecs-svc/100', 'task302', 'PROVISIONING'));

    const resumed = await open(`?moduleInstanceId=${webId}`, { 'last-event-id': a.id! });
    await resumed.next((e) => e.data.data?.taskArn?.endsWith('task302'));
    assert.deepEqual(
      resumed.received.map((e) => e.data.data.taskArn.split('/').at(-1)),
      ['task301', 'task302'],
    );
    const fresh = await open(`?moduleInstanceId=${webId}`);
    await ingest(task(WEB, 'ecs-svc/100', 'task303', 'PROVISIONING'));
    const firstFresh = await fresh.next(() => true);
    assert.match(firstFresh.data.data.taskArn, /task303$/);
  });

  it('never skips a change that commits after a later one: the stream waits for it, and sends it first', async () => {
    const feed = await open(`?moduleInstanceId=${webId}`);
    const client = new pg.Client({ connectionString: t.database.url });
    await client.connect();
    try {
      await client.query('begin');
      await client.query(
        `insert into domain_events (id, organization_id, module_instance_id, kind, data)
         select 'slowevent0000000000000000000000', organization_id, id, 'DNS_VERIFIED', '{}' from module_instances where id = $1`,
        [webId],
      );
      await ingest(task(WEB, 'ecs-svc/100', 'task400', 'RUNNING'));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.equal(feed.received.length, 0, 'nothing is sent while an older transaction is still open');
      await client.query('commit');
    } finally {
      await client.end();
    }
    await feed.next((e) => e.data.data?.taskArn?.endsWith('task400'));
    assert.deepEqual(
      feed.received.map((e) => e.event),
      ['domain-event', 'deployment-resource'],
    );
  });

  it('reads the same events a page at a time as JSON, for clients that poll', async () => {
    const page = async (query: string) => {
      const res = await t.call('GET', `/events/stream?moduleInstanceId=${webId}${query}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    };
    const now = await page('');
    assert.deepEqual(now.data, [], 'without after, it starts from now');
    await ingest(task(WEB, 'ecs-svc/100', 'task600', 'RUNNING'));
    let next = await page(`&after=${now.meta.lastEventId}`);
    for (let i = 0; i < 50 && next.data.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      next = await page(`&after=${now.meta.lastEventId}`);
    }
    const resource = next.data.find((e: any) => e.event === 'deployment-resource');
    assert.match(resource.data.data.taskArn, /task600$/);
    assert.deepEqual(resource.data, (await t.call('GET', `/deployment-resources/${resource.data.id}`)).body.data.data);
    assert.equal(next.meta.more, false);
    assert.deepEqual((await page(`&after=${next.meta.lastEventId}`)).data, [], 'read once');
    assertError(await t.call('GET', '/events/stream?after=not-an-id'), 400, 'Api:Request:INVALID');
  });

  it('refuses a bad Last-Event-ID, and a filter naming what the organization does not hold', async () => {
    const call = (query: string, headers: Record<string, string> = {}) =>
      t.call('GET', `/events/stream${query}`, { headers: { accept: 'text/event-stream', ...headers } });
    assertError(await call('', { 'last-event-id': 'abc' }), 400, 'Api:Request:INVALID');
    assertError(await call('', { 'last-event-id': `${2n ** 64n}-1` }), 400, 'Api:Request:INVALID');
    // PostgreSQL would read a leading zero as octal; an id from the future is no id this database gave.
    assertError(await call('', { 'last-event-id': '010-1' }), 400, 'Api:Request:INVALID');
    assertError(await call('', { 'last-event-id': `${2n ** 60n}-1` }), 400, 'Api:Request:INVALID');
    assertError(await call('?moduleInstanceId=nosuchinstance0000000000000000000'), 404, 'Api:ModuleInstance:NOT_FOUND');
    const other = await createOrganization(t, 'Feed filters');
    assertError(await call(`?environmentId=${prodId}`, inOrg(other)), 404, 'Api:Environment:NOT_FOUND');
    assertError(await call('?color=red'), 400);
  });

  it('tells a quiet filtered stream where it is, so that resuming does not read again what its filter left out, and to reconnect once its time is up', async () => {
    const quiet = await open(`?moduleInstanceId=${apiId}`);
    for (let i = 0; i < 50 && quiet.lastId === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    const opened = quiet.lastId;
    assert.match(opened ?? '', /^\d+-\d+$/, 'the stream gives its place as it opens');
    const principal = (await t.app.inject({ method: 'GET', url: '/auth/whoami', headers: { authorization: `Bearer ${t.adminToken}` } })).json().data;
    const places: string[] = [];
    let reconnected = 0;
    const target: FeedTarget = {
      event: async () => assert.fail('no event passes the filter'),
      position: async (id) => void places.push(id),
      reconnect: async () => void reconnected++,
      closed: () => false,
    };
    const start = await openFeed(t.db, { organizationId: principal.organizationId } as Principal, undefined, { moduleInstanceId: apiId });
    const following = followFeed(t.db, { organizationId: principal.organizationId } as Principal, start, { moduleInstanceId: apiId }, target, {
      pollMs: 50,
      maxMs: 1500,
    });
    await ingest(task(WEB, 'ecs-svc/100', 'task500', 'RUNNING'));
    await following;
    const [first, last] = [places[0], places.at(-1)!].map((p) => BigInt(p.split('-')[0]));
    assert.ok(last > first, `the place moved past the other instance's change: ${places.join(', ')}`);
    assert.equal(reconnected, 1, 'a stream whose time is up tells its client to reconnect, after its place');
  });

  it('cuts a page once its records reach its size, and the pages after it bring the rest in order', async () => {
    const principal = (await t.app.inject({ method: 'GET', url: '/auth/whoami', headers: { authorization: `Bearer ${t.adminToken}` } })).json()
      .data as Principal;
    const filter = { moduleInstanceId: webId };
    const start = await openFeed(t.db, principal, undefined, filter);
    for (const id of ['task700', 'task701', 'task702']) await ingest(task(WEB, 'ecs-svc/100', id, 'RUNNING'));
    let whole = await readFeed(t.db, principal, start, filter);
    for (let i = 0; i < 50 && whole.events.filter((e) => e.event === 'deployment-resource').length < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      whole = await readFeed(t.db, principal, start, filter);
    }
    assert.equal(whole.more, false);
    assert.ok(whole.events.length >= 3, JSON.stringify(whole.events.map((e) => e.event)));

    const paged: string[] = [];
    for (let cursor = start, pages = 0; ; pages++) {
      assert.ok(pages <= whole.events.length + 1, 'the pages end');
      const page = await readFeed(t.db, principal, cursor, filter, { maxBytes: 1 });
      paged.push(...page.events.map((e) => e.id));
      if (!page.more) break;
      assert.equal(page.events.length, 1, 'a page holds its first record, however large, and stops there');
      cursor = page.position;
    }
    assert.deepEqual(
      paged.filter((id) => whole.events.some((e) => e.id === id)),
      whole.events.map((e) => e.id),
    );
  });

  it('deletes entries older than a day, and only those', async () => {
    await t.db
      .updateTable('feed_entries')
      .set({ created_at: new Date(Date.now() - 25 * 3_600_000) })
      .where('record_id', '=', 'slowevent0000000000000000000000')
      .execute();
    const count = async () =>
      Number(
        (
          await t.db
            .selectFrom('feed_entries')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await count();
    const pruner = new FeedPruner(t.db, { warn() {} } as never);
    assert.equal(await pruner.pruneOnce(), 1);
    assert.equal(await count(), before - 1);
    assert.equal(await pruner.pruneOnce(), 0);
  });
});
