import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { encodeCursor } from '../src/platform/pagination.ts';
import { projectsPageQuery } from '../src/projects/projects.repo.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg } from './helpers/callers.ts';

interface Row {
  id: string;
}

describe('catalogue pagination', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp()));
  after(() => t.close());

  /** Follows nextCursor to the end, returning every page's ids in order. */
  async function walk(url: string, limit: number, headers?: Record<string, string>, between?: () => Promise<void>) {
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 10_000; pages++) {
      const sep = url.includes('?') ? '&' : '?';
      const res = await t.call('GET', `${url}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, { headers });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.meta.limit, limit);
      assert.ok(res.body.data.length <= limit);
      ids.push(...res.body.data.map((r: Row) => r.id));
      cursor = res.body.meta.nextCursor;
      if (!cursor) return ids;
      await between?.();
    }
    throw new Error('pagination did not end');
  }

  function assertStrictlyAscending(ids: string[]) {
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `ids out of order or duplicated at ${i}`);
  }

  it('every catalogue list walks to the end with no duplicates and no gaps', async () => {
    const org = await createOrganization(t, 'Walk');
    const h = inOrg(org);
    const post = async (url: string, data: Record<string, unknown>) => {
      const res = await t.call('POST', url, { headers: h, body: { data } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.data.id as string;
    };
    const created: Record<string, string[]> = { projects: [], environments: [], 'cloud-accounts': [], 'execution-environments': [], 'default-values': [] };
    for (let i = 0; i < 7; i++) created.projects.push(await post('/projects', { givenId: `p${i}`, name: `P${i}` }));
    for (let i = 0; i < 7; i++) created.environments.push(await post('/environments', { projectId: created.projects[0], givenId: `e${i}`, name: 'E' }));
    for (let i = 0; i < 7; i++) {
      created['cloud-accounts'].push(
        await post('/cloud-accounts', { givenId: `c${i}`, name: 'C', accountId: '123456789012', roleArn: 'arn:aws:iam::123456789012:role/r' }),
      );
    }
    for (let i = 0; i < 7; i++) created['execution-environments'].push(await post('/execution-environments', { givenId: `x${i}`, name: 'X', type: 'LOCAL' }));
    const region = (await t.call('GET', '/default-value-definitions', { headers: h })).body.data[0].id;
    for (const parentId of created.projects)
      created['default-values'].push(await post('/default-values', { defaultValueDefinitionId: region, parentId, value: 'eu-west-1' }));

    for (const [url, expected] of Object.entries(created)) {
      for (const limit of [1, 3, 7, 200]) assert.deepEqual(await walk(`/${url}`, limit, h), expected, `${url} limit ${limit}`);
    }
    assert.deepEqual(await walk(`/environments?projectId=${created.projects[0]}`, 2, h), created.environments);
    assert.deepEqual(await walk(`/default-values?defaultValueDefinitionId=${region}`, 2, h), created['default-values']);
    const definitions = await walk('/default-value-definitions', 1, h);
    assert.equal(definitions.length, 1, 'the seeded aws_region definition');
  });

  it('order=desc walks the same rows newest first, with no duplicates and no gaps', async () => {
    const org = await createOrganization(t, 'Newest');
    const h = inOrg(org);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await t.call('POST', '/projects', { headers: h, body: { data: { givenId: `n${i}`, name: 'N' } } })).body.data.id);
    for (const limit of [1, 3, 7]) assert.deepEqual(await walk('/projects?order=desc', limit, h), [...ids].reverse(), `limit ${limit}`);
    assert.deepEqual(await walk('/projects?order=asc', 3, h), ids);
    assert.equal((await t.call('GET', '/projects?order=newest', { headers: h })).status, 400);
    const first = await t.call('GET', '/projects?order=desc&limit=2', { headers: h });
    const switched = await t.call('GET', `/projects?limit=2&cursor=${first.body.meta.nextCursor}`, { headers: h });
    assert.equal(switched.status, 400, 'a newest-first cursor read oldest first would skip rows');
    assert.equal(switched.body.code, 'Api:Cursor:INVALID');
  });

  it('givenId and name filters find a record by what a person calls it', async () => {
    const org = await createOrganization(t, 'Named');
    const h = inOrg(org);
    const post = async (url: string, data: Record<string, unknown>) => (await t.call('POST', url, { headers: h, body: { data } })).body.data.id as string;
    const web = await post('/projects', { givenId: 'web', name: 'Web site' });
    await post('/projects', { givenId: 'api', name: 'Web site' });
    const prod = await post('/environments', { projectId: web, givenId: 'prod', name: 'Production' });
    const list = async (url: string) => {
      const res = await t.call('GET', url, { headers: h });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data.map((r: Row) => r.id);
    };
    assert.deepEqual(await list('/projects?givenId=web'), [web]);
    assert.equal((await list(`/projects?name=${encodeURIComponent('Web site')}`)).length, 2, 'names need not be unique');
    assert.deepEqual(await list('/projects?name=Web'), [], 'a name matches exactly, not as a prefix');
    assert.deepEqual(await list(`/environments?projectId=${web}&givenId=prod`), [prod]);
    assert.deepEqual(await list('/environments?name=Production'), [prod]);
    assert.deepEqual(await list('/pipelines?givenId=nothing'), []);
    assert.deepEqual(await list('/stacks?name=nothing'), []);
    assert.deepEqual(await list('/code-sources?givenId=nothing'), []);
    assert.equal((await t.call('GET', '/projects?givenId=not%20a%20given%20id', { headers: h })).status, 400);
  });

  it('a larger limit is clamped to 200 and said so; limit 0 and a foreign cursor are 400', async () => {
    const clamped = await t.call('GET', '/projects?limit=500');
    assert.equal(clamped.status, 200);
    assert.equal(clamped.body.meta.limit, 200);
    assert.equal((await t.call('GET', '/default-value-definitions')).body.meta.limit, 50, 'default page size');
    assert.equal((await t.call('GET', '/environments?limit=0')).status, 400);
    assert.equal((await t.call('GET', '/default-values?cursor=not-ours')).status, 400);
  });

  it('a walk stays complete and duplicate-free while rows are inserted concurrently', async () => {
    const org = await createOrganization(t, 'Busy');
    const h = inOrg(org);
    const before: string[] = [];
    for (let i = 0; i < 25; i++) before.push((await t.call('POST', '/projects', { headers: h, body: { data: { givenId: `b${i}`, name: 'B' } } })).body.data.id);
    let n = 0;
    const insertSome = async () => {
      await Promise.all([0, 1, 2].map(() => t.call('POST', '/projects', { headers: h, body: { data: { givenId: `during${n++}`, name: 'D' } } })));
    };
    const seen = await walk('/projects', 4, h, insertSome);
    assertStrictlyAscending(seen);
    for (const id of before) assert.ok(seen.includes(id), `project ${id} that existed before the walk was skipped`);
    assert.ok(seen.length >= before.length);
  });

  it('a page deep in a 100,000-row table costs about what the first page costs, through the index', async () => {
    const org = await createOrganization(t, 'Deep');
    // Ids below every newId() (those start with the current time), in a fixed order: row g has id deep(g).
    await sql`insert into projects (id, organization_id, given_id, name)
              select lpad(to_hex(g), 32, '0'), ${org}, 'deep' || g, 'Deep ' || g from generate_series(1, 100000) g`.execute(t.db);
    await sql`analyze projects`.execute(t.db);
    const deep = (g: number) => g.toString(16).padStart(32, '0');

    const plan = await projectsPageQuery(t.db, org, {}, { limit: 50, after: deep(99_000) }).explain('json');
    const text = JSON.stringify(plan);
    assert.match(text, /Index (Only )?Scan/);
    assert.doesNotMatch(text, /"Node Type":"Sort"/);
    assert.doesNotMatch(text, /Seq Scan/);
    // Newest first and a name that matches nothing take the same kind of path: no sort, no walk.
    for (const [filter, page] of [
      [{}, { limit: 50, after: deep(1_000), order: 'desc' as const }],
      [{ name: 'No such project' }, { limit: 50 }],
    ] as const) {
      const other = JSON.stringify(await projectsPageQuery(t.db, org, filter, page).explain('json'));
      assert.match(other, /Index (Only )?Scan/, JSON.stringify(filter));
      assert.doesNotMatch(other, /"Node Type":"Sort"|Seq Scan/, JSON.stringify(filter));
    }

    const time = async (cursor?: string) => {
      const started = process.hrtime.bigint();
      const res = await t.call('GET', `/projects?limit=50${cursor ? `&cursor=${cursor}` : ''}`, { headers: inOrg(org) });
      return { res, ms: Number(process.hrtime.bigint() - started) / 1e6 };
    };
    await time(); // warm up the connection and caches alike for both measurements
    const first: number[] = [];
    const deepTimes: number[] = [];
    let deepPage;
    for (let i = 0; i < 5; i++) {
      first.push((await time()).ms);
      const d = await time(encodeCursor(deep(99_000)));
      deepTimes.push(d.ms);
      deepPage = d.res;
    }
    assert.deepEqual(
      deepPage!.body.data.map((p: { givenId: string }) => p.givenId),
      Array.from({ length: 50 }, (_, i) => `deep${99_001 + i}`),
    );
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    assert.ok(median(deepTimes) < median(first) * 3 + 20, `deep page ${median(deepTimes)} ms vs first page ${median(first)} ms`);
    console.log(`# deep page (row 99,000 of 100,000): ${median(deepTimes).toFixed(1)} ms; first page: ${median(first).toFixed(1)} ms`);
  });
});
