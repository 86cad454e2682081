import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { STEP_STOP_CHANNEL } from '../src/engine/executions.repo.ts';
import { CREDENTIAL_CHANNEL, CredentialStore } from '../src/platform/auth/credential-store.ts';
import { createDb, type Db } from '../src/platform/db/db.ts';
import { ChannelListener } from '../src/platform/db/listener.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

/**
 * The processes' LISTEN connections (the worker's step-stop listener, the API's credential cache, both
 * a ChannelListener)
 * through a database outage: however long it lasts, each reconnects with one connection, and keeps
 * trying at a bounded pace (one attempt in flight at a time), not one more chain of retries per failure.
 */
describe('LISTEN connections through a database outage', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let admin: pg.Client;
  let db: Db;
  let viaProxy: string;

  before(async () => {
    database = await createTestDatabase();
    const url = new URL(database.url);
    proxy = await startTcpProxy(Number(url.port), url.hostname);
    url.port = String(proxy.port);
    viaProxy = url.toString();
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    db = createDb(database.url, 2);
  });
  after(async () => {
    await db.destroy();
    await admin.end();
    await proxy.close();
    await database.drop();
  });

  /** Backends of this test's database listening on `channel`. */
  const listeners = async (channel: string) =>
    Number((await admin.query(`select count(*) from pg_stat_activity where datname = $1 and query = $2`, [database.name, `listen ${channel}`])).rows[0].count);

  async function waitForListeners(channel: string, n: number) {
    for (let i = 0; i < 200 && (await listeners(channel)) !== n; i++) await sleep(50);
    return listeners(channel);
  }

  it('the step-stop listener reconnects with one connection after a 4 s outage, retried one attempt at a time, and hears each stop once', async () => {
    const warnings: string[] = [];
    const log = { warn: (_o: object, msg: string) => warnings.push(msg) };
    const stops: string[] = [];
    const listener = new ChannelListener({
      connectionString: viaProxy,
      channel: STEP_STOP_CHANNEL,
      name: 'the step-stop listener',
      log,
      onNotification: (id) => id && stops.push(id),
    });
    await listener.start();
    assert.equal(await waitForListeners('plinth_step_stop', 1), 1);
    await proxy.cut(4_000);
    // Backoff from 100 ms doubling, capped at 5 s: about six attempts in four seconds, not one more chain per failure.
    assert.ok(warnings.length <= 8, `${warnings.length} reconnect warnings in 4 s`);
    assert.equal(await waitForListeners('plinth_step_stop', 1), 1);
    await sleep(1_500); // A second chain of retries would connect by now.
    assert.equal(await listeners('plinth_step_stop'), 1, 'one LISTEN connection after the outage');
    await admin.query(`select pg_notify('plinth_step_stop', 'execution-1')`);
    for (let i = 0; i < 100 && stops.length === 0; i++) await sleep(20);
    await sleep(200);
    assert.deepEqual(stops, ['execution-1']);
    await listener.close();
    assert.equal(await waitForListeners('plinth_step_stop', 0), 0);
  });

  it('the credential cache reconnects with one connection after a 4 s outage', async () => {
    const warnings: string[] = [];
    const store = new CredentialStore(db, { listenUrl: viaProxy, log: { warn: (_o, msg) => warnings.push(msg) } });
    await store.start();
    assert.equal(await waitForListeners(CREDENTIAL_CHANNEL, 1), 1);
    await proxy.cut(4_000);
    assert.ok(warnings.length <= 6, `${warnings.length} reconnect warnings in 4 s`);
    assert.equal(await waitForListeners(CREDENTIAL_CHANNEL, 1), 1);
    await sleep(1_500);
    assert.equal(await listeners(CREDENTIAL_CHANNEL), 1, 'one LISTEN connection after the outage');
    await store.close();
    assert.equal(await waitForListeners(CREDENTIAL_CHANNEL, 0), 0);
  });
});
