import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError } from './helpers/callers.ts';

/** Every identity route (organizations, memberships, service accounts, API keys) that takes a body, with a body it would accept. */
const WRITES: { method: 'POST' | 'PATCH'; url: (ids: Ids) => string; valid: Record<string, unknown> }[] = [
  { method: 'POST', url: () => '/organizations', valid: { name: 'Org', billingEmail: 'b@example.com' } },
  { method: 'PATCH', url: (ids) => `/organizations/${ids.org}`, valid: { name: 'Org' } },
  { method: 'POST', url: () => '/memberships', valid: { email: 'm@example.com', role: 'VIEWER' } },
  { method: 'PATCH', url: (ids) => `/memberships/${ids.membership}`, valid: { role: 'OWNER' } },
  { method: 'POST', url: () => '/service-accounts', valid: { name: 'sa', role: 'VIEWER' } },
  { method: 'PATCH', url: (ids) => `/service-accounts/${ids.serviceAccount}`, valid: { name: 'sa' } },
  { method: 'POST', url: () => '/api-keys', valid: { name: 'key' } },
];

interface Ids {
  org: string;
  membership: string;
  serviceAccount: string;
}

describe('bad input is always a 4xx ErrorBody', () => {
  let t: TestApp;
  let ids: Ids;
  before(async () => {
    t = await startTestApp();
    const who = await t.call('GET', '/auth/whoami');
    const sa = await t.call('POST', '/service-accounts', { body: { data: { name: 'target', role: 'VIEWER' } } });
    ids = { org: who.body.data.organizationId, membership: who.body.data.membershipId, serviceAccount: sa.body.data.id };
  });
  after(() => t.close());

  for (const route of WRITES) {
    const name = `${route.method} ${route.url({ org: '{id}', membership: '{id}', serviceAccount: '{id}' })}`;

    it(`${name}: malformed JSON is 400 Api:Request:MALFORMED_JSON`, async () => {
      for (const rawBody of ['{"data": {', '{data: {}}', "{'data': {}}", '{"data": {}} trailing', 'nul']) {
        assertError(await t.call(route.method, route.url(ids), { rawBody }), 400, 'Api:Request:MALFORMED_JSON');
      }
    });

    it(`${name}: a body that is not {data: object} is 400`, async () => {
      for (const body of [{}, { data: null }, { data: 'x' }, { data: 5 }, { data: [] }, [route.valid], 'data', null, { ...route.valid }]) {
        const res = await t.call(route.method, route.url(ids), { rawBody: JSON.stringify(body) });
        assertError(res, 400);
      }
      assertError(await t.call(route.method, route.url(ids), { rawBody: '' }), 400);
      assertError(await t.call(route.method, route.url(ids), { body: { data: route.valid, meta: {} } }), 400);
    });

    it(`${name}: wrong types are 400 (no coercion of body values)`, async () => {
      for (const [field, value] of Object.entries(route.valid)) {
        for (const wrong of [5, true, null, [value], { value }]) {
          const res = await t.call(route.method, route.url(ids), { body: { data: { ...route.valid, [field]: wrong } } });
          assertError(res, 400, 'Api:Request:INVALID');
          assert.ok(
            res.body.details[0].items.some((line: string) => line.includes(field)),
            `${field}=${JSON.stringify(wrong)}: ${JSON.stringify(res.body.details)}`,
          );
        }
      }
    });

    it(`${name}: unknown and read-only fields are 400, naming the field`, async () => {
      for (const field of ['id', 'createdAt', 'updatedAt', 'organizationId', 'surprise']) {
        const res = await t.call(route.method, route.url(ids), { body: { data: { ...route.valid, [field]: 'x' } } });
        assertError(res, 400, 'Api:Request:INVALID');
        assert.ok(res.body.details[0].items.some((line: string) => line.includes(field)));
      }
    });

    it(`${name}: a 1 MB string is 400 or 413, never stored`, async () => {
      const field = Object.keys(route.valid)[0];
      for (const size of [300 * 1024, 1024 * 1024]) {
        const res = await t.call(route.method, route.url(ids), { body: { data: { ...route.valid, [field]: 'x'.repeat(size) } } });
        assert.ok(res.status === 400 || res.status === 413, `${size}: ${res.status}`);
        assertError(res, res.status);
      }
    });

    it(`${name}: a body that is not JSON is 415`, async () => {
      const res = await t.call(route.method, route.url(ids), { rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      assertError(res, 415, 'Api:Request:UNSUPPORTED_MEDIA_TYPE');
    });
  }

  it('a prototype-pollution key is a 400 like any unknown key, not obeyed', async () => {
    const rawBody = '{"data": {"name": "P", "billingEmail": "p@example.com", "__proto__": {"isSuperAdmin": true}}}';
    const res = await t.call('POST', '/organizations', { rawBody });
    assertError(res, 400, 'Api:Request:INVALID');
    assert.equal(({} as Record<string, unknown>).isSuperAdmin, undefined);
  });

  it('a path id longer than 64 characters is 400', async () => {
    assertError(await t.call('GET', `/memberships/${'a'.repeat(65)}`), 400, 'Api:Request:INVALID');
  });

  it('an unknown query parameter is 400', async () => {
    assertError(await t.call('GET', '/memberships?sort=desc'), 400, 'Api:Request:INVALID');
  });
});
