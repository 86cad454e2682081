import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { encodeCursor } from '../src/platform/pagination.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg } from './helpers/callers.ts';

const MEMBERS = 230;

describe('keyset cursor pagination (GET /memberships)', () => {
  let t: TestApp;
  let orgId: string;
  let allIds: string[];
  before(async () => {
    t = await startTestApp();
    orgId = await createOrganization(t, 'Crowd');
    // Ids as newId() makes them: time-ordered hex, so the id order is the creation order.
    await sql`
      insert into users (id, email)
      select lpad(to_hex(g), 32, '0'), 'crowd' || g || '@example.com' from generate_series(1, ${MEMBERS}) g`.execute(t.db);
    await sql`
      insert into memberships (id, organization_id, user_id, role)
      select lpad(to_hex(g), 32, 'f'), ${orgId}, lpad(to_hex(g), 32, '0'), 'VIEWER' from generate_series(1, ${MEMBERS}) g`.execute(t.db);
    const rows = await t.db.selectFrom('memberships').select('id').where('organization_id', '=', orgId).orderBy('id').execute();
    allIds = rows.map((r) => r.id);
    assert.equal(allIds.length, MEMBERS + 1);
  });
  after(() => t.close());

  const page = (query: string) => t.call('GET', `/memberships${query}`, { headers: inOrg(orgId) });

  it('walking every page with a small limit returns every row once, in order, and the last page has no nextCursor', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await page(`?limit=17${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.meta.limit, 17);
      assert.ok(res.body.data.length <= 17);
      seen.push(...res.body.data.map((m: { id: string }) => m.id));
      cursor = res.body.meta.nextCursor;
      pages++;
    } while (cursor);
    assert.deepEqual(seen, allIds);
    assert.equal(pages, Math.ceil(allIds.length / 17));
  });

  it('without limit a page holds 50 rows', async () => {
    const res = await page('');
    assert.equal(res.body.meta.limit, 50);
    assert.equal(res.body.data.length, 50);
    assert.equal(typeof res.body.meta.nextCursor, 'string');
  });

  it('a limit above 200 is clamped to 200, and meta.limit says so', async () => {
    const res = await page('?limit=1000');
    assert.equal(res.status, 200);
    assert.equal(res.body.meta.limit, 200);
    assert.equal(res.body.data.length, 200);
  });

  it('a page exactly as long as what is left has no nextCursor', async () => {
    const res = await page(`?limit=20&cursor=${encodeCursor(allIds[allIds.length - 21])}`);
    assert.deepEqual(
      res.body.data.map((m: { id: string }) => m.id),
      allIds.slice(-20),
    );
    assert.equal(res.body.meta.nextCursor, undefined);
  });

  it('rows added before the cursor position do not shift later pages', async () => {
    const first = await page('?limit=5');
    await t.call('POST', '/memberships', { headers: inOrg(orgId), body: { data: { email: 'late@example.com', role: 'VIEWER' } } });
    const second = await page(`?limit=5&cursor=${first.body.meta.nextCursor}`);
    assert.deepEqual(
      second.body.data.map((m: { id: string }) => m.id),
      allIds.slice(5, 10),
    );
  });

  it('limit below 1 or not an integer is 400', async () => {
    for (const limit of ['0', '-5', 'abc', '1.5', '99999999999']) assertError(await page(`?limit=${limit}`), 400, 'Api:Request:INVALID');
  });

  it('a cursor that does not decode is 400 Api:Cursor:INVALID', async () => {
    const notOurs = [
      'garbage!!',
      Buffer.from('not json').toString('base64url'),
      Buffer.from('{"x":1}').toString('base64url'),
      Buffer.from('{"k":5}').toString('base64url'),
      Buffer.from('"k"').toString('base64url'),
    ];
    for (const cursor of notOurs) assertError(await page(`?cursor=${encodeURIComponent(cursor)}`), 400, 'Api:Cursor:INVALID');
    assertError(await page(`?cursor=${'a'.repeat(600)}`), 400);
  });

  it('a cursor past the last row is an empty last page', async () => {
    const res = await page(`?cursor=${encodeCursor('g')}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, []);
    assert.equal(res.body.meta.nextCursor, undefined);
  });

  it('every identity list route paginates with the same meta', async () => {
    for (const url of ['/organizations', '/memberships', '/service-accounts', '/api-keys']) {
      const res = await t.call('GET', `${url}?limit=1`);
      assert.equal(res.status, 200, url);
      assert.deepEqual(Object.keys(res.body).sort(), ['data', 'meta']);
      assert.equal(res.body.meta.limit, 1);
      assertError(await t.call('GET', `${url}?limit=0`), 400);
      assertError(await t.call('GET', `${url}?cursor=%25%25`), 400);
    }
  });
});
