import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';

const count = { id: 'count', label: 'Count', type: 'number', integer: true, min: 0 };

describe('catalogue under concurrent requests', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp()));
  after(() => t.close());

  it('of concurrent creations with one givenId exactly one wins, the others are 409', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => t.call('POST', '/projects', { body: { data: { givenId: 'race', name: 'Race' } } })));
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
  });

  it('an empty PATCH changes nothing, not even updatedAt', async () => {
    const p = (await t.call('POST', '/projects', { body: { data: { givenId: 'still', name: 'Still' } } })).body.data;
    const res = await t.call('PATCH', `/projects/${p.id}`, { body: { data: {} } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, p);
  });

  it('a schema change racing value writes never leaves a value the new schema refuses', async () => {
    for (let round = 0; round < 5; round++) {
      const def = (await t.call('POST', '/default-value-definitions', { body: { data: { givenId: `race${round}`, name: 'R', schema: count } } })).body.data;
      const projects = await Promise.all(
        [0, 1, 2, 3].map(async (i) => (await t.call('POST', '/projects', { body: { data: { givenId: `r${round}-${i}`, name: 'P' } } })).body.data.id),
      );
      const [patch] = await Promise.all([
        t.call('PATCH', `/default-value-definitions/${def.id}`, { body: { data: { schema: { ...count, max: 10 } } } }),
        ...projects.map((parentId) => t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: def.id, parentId, value: 40 } } })),
      ]);
      const schema = (await t.call('GET', `/default-value-definitions/${def.id}`)).body.data.schema;
      const values = (await t.call('GET', `/default-values?defaultValueDefinitionId=${def.id}`)).body.data.map((v: { value: number }) => v.value);
      if (patch.status === 200) {
        assert.equal(schema.max, 10);
        assert.deepEqual(values, [], 'every write after the change was refused');
      } else {
        assert.equal(patch.status, 422);
        assert.equal(schema.max, undefined);
      }
    }
  });

  it('a value racing the deletion of its project does not outlive the project', async () => {
    const region = (await t.call('GET', '/default-value-definitions')).body.data.find((d: { givenId: string }) => d.givenId === 'aws_region').id;
    for (let round = 0; round < 5; round++) {
      const p = (await t.call('POST', '/projects', { body: { data: { givenId: `gone${round}`, name: 'G' } } })).body.data.id;
      await Promise.all([
        t.call('DELETE', `/projects/${p}`),
        t.call('POST', '/default-values', { body: { data: { defaultValueDefinitionId: region, parentId: p, value: 'eu-west-1' } } }),
      ]);
      const left = (await t.call('GET', `/default-values?parentId=${p}`)).body.data;
      assert.deepEqual(left, []);
    }
  });
});
