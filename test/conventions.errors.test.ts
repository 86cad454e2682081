import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { RoutePlugin } from '../src/platform/http/app.ts';
import { Body, Envelope, GivenId } from '../src/platform/schema.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, serviceAccountCaller, type ServiceAccountCaller } from './helpers/callers.ts';

/** Test-only routes: one that fails the way a bug would, one that takes a GivenId. */
const testRoutes: RoutePlugin = async (app) => {
  app.get('/test/boom', async () => {
    throw new Error('connection to 10.1.2.3 refused: secret internals');
  });
  app.post(
    '/test/given-ids',
    {
      config: { permission: 'authenticated' },
      schema: {
        body: Body(Type.Object({ givenId: GivenId }, { additionalProperties: false })),
        response: { 201: Envelope(Type.Object({ givenId: Type.String() })) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: { givenId: request.body.data.givenId } }),
  );
};

describe('error conventions', () => {
  let t: TestApp;
  let viewer: ServiceAccountCaller;
  before(async () => {
    t = await startTestApp({ extraRoutes: [testRoutes] });
    viewer = await serviceAccountCaller(t, 'VIEWER');
  });
  after(() => t.close());

  it('every response carries X-Request-Id, and an error repeats it as requestId', async () => {
    const ok = await t.call('GET', '/auth/whoami');
    assert.match(String(ok.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    const a = await t.call('GET', '/memberships/nope');
    const b = await t.call('GET', '/memberships/nope');
    assertError(a, 404, 'Api:Membership:NOT_FOUND');
    assert.notEqual(a.body.requestId, b.body.requestId);
  });

  it('an unknown route is a 404 ErrorBody, with or without a credential', async () => {
    assertError(await t.call('GET', '/no-such-thing'), 404, 'Api:Route:NOT_FOUND');
    assertError(await t.call('GET', '/no-such-thing', { token: null }), 404, 'Api:Route:NOT_FOUND');
    assertError(await t.call('POST', '/organizations/x/y', { body: {} }), 404);
  });

  it('a wrong method is a 405 ErrorBody with an Allow header listing the methods', async () => {
    const res = await t.call('PUT', '/organizations', { body: { data: {} } });
    assertError(res, 405, 'Api:Request:METHOD_NOT_ALLOWED');
    assert.equal(res.headers.allow, 'GET, POST');
    const one = await t.call('DELETE', '/organizations/abc');
    assertError(one, 405);
    assert.equal(one.headers.allow, 'GET, PATCH');
    const whoami = await t.call('POST', '/auth/whoami', { token: null });
    assertError(whoami, 405);
    assert.equal(whoami.headers.allow, 'GET');
  });

  it('error metadata is withheld from callers who are not super-administrators', async () => {
    const denied = await t.call('POST', '/service-accounts', { token: viewer.token, body: { data: { name: 'x', role: 'VIEWER' } } });
    assertError(denied, 403, 'Auth:Permission:DENIED');
    assert.equal(denied.body.metadata, undefined);
    assert.match(denied.body.message, /ADMIN/);
  });

  it('a 500 shows a normal caller nothing of the cause', async () => {
    const res = await t.call('GET', '/test/boom', { token: viewer.token });
    assertError(res, 500, 'Api:Internal:ERROR');
    assert.equal(res.body.isInternal, undefined);
    assert.equal(res.body.description, undefined);
    assert.equal(res.body.metadata, undefined);
    assert.ok(!JSON.stringify(res.body).includes('secret internals'));
  });

  it('a 500 shows a super-administrator the cause, marked isInternal', async () => {
    const res = await t.call('GET', '/test/boom');
    assertError(res, 500, 'Api:Internal:ERROR');
    assert.equal(res.body.isInternal, true);
    assert.match(res.body.description, /secret internals/);
  });

  it('a 403 for a role that may not carries the permission it lacked', async () => {
    const res = await t.call('POST', '/service-accounts', { token: viewer.token, body: { data: { name: 'x', role: 'VIEWER' } } });
    assertError(res, 403, 'Auth:Permission:DENIED');
    assert.match(res.body.message, /ADMIN/);
  });

  it('a GivenId of 1 to 60 letters, digits, _ and - starting with a letter or digit is accepted', async () => {
    for (const givenId of ['a', '0', 'web-app_2', 'x'.repeat(60)]) {
      const res = await t.call('POST', '/test/given-ids', { body: { data: { givenId } } });
      assert.equal(res.status, 201, givenId);
    }
  });

  it('any other GivenId is 400', async () => {
    for (const givenId of ['', '-web', '_web', 'web app', 'wéb', 'web.app', 'x'.repeat(61), 12]) {
      assertError(await t.call('POST', '/test/given-ids', { body: { data: { givenId } } }), 400, 'Api:Request:INVALID');
    }
  });

  it('timestamps are RFC 3339 UTC with a trailing Z', async () => {
    const org = await t.call('GET', '/organizations');
    for (const o of org.body.data) {
      assert.match(o.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/);
      assert.match(o.updatedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/);
    }
  });
});
