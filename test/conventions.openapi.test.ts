import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { RoutePlugin } from '../src/platform/http/app.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

/**
 * Records every route registered after it. Marked like fastify-plugin does, so its hook lives in the
 * root context and sees the routes of every plugin that follows.
 */
function routeCollector(into: { method: string; url: string; public: boolean }[]): RoutePlugin {
  const plugin: RoutePlugin = async (app) => {
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const isPublic = Boolean((route.config as { public?: boolean } | undefined)?.public);
      // OpenAPI 3.0 has no LOCK or UNLOCK: the state backend's lock routes are documented in docs/opentofu.md.
      for (const method of methods) if (method !== 'LOCK' && method !== 'UNLOCK') into.push({ method: method.toLowerCase(), url: route.url, public: isPublic });
    });
  };
  (plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
  return plugin;
}

/** Fastify's `/a/:id` as OpenAPI's `/a/{id}`. */
const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('GET /openapi.json', () => {
  let t: TestApp;
  let doc: any;
  const routes: { method: string; url: string; public: boolean }[] = [];
  before(async () => {
    // The collector goes first so it sees every product route; the document is the product's own.
    t = await startTestApp({ routesBefore: [routeCollector(routes)] });
    const res = await t.call('GET', '/openapi.json', { token: null });
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(() => t.close());

  it('is served without a credential as OpenAPI 3.0.0, info version 0.0.0', () => {
    assert.equal(doc.openapi, '3.0.0');
    assert.equal(doc.info.version, '0.0.0');
    assert.equal(typeof doc.info.title, 'string');
  });

  it('the public routes answer whatever credential is sent, or none', async () => {
    for (const url of ['/openapi.json', '/health']) {
      for (const token of [null, 'plk_not_valid', t.adminToken]) assert.equal((await t.call('GET', url, { token })).status, 200, `${url} ${token}`);
    }
  });

  it('validates as an OpenAPI 3.0 document, and every $ref resolves', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.deepEqual(result.errors ?? [], [], JSON.stringify(result.errors, null, 2)?.slice(0, 4000));
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.0');
    const unresolved: string[] = [];
    const walk = (node: unknown) => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === '$ref') {
            const match = /^#\/components\/schemas\/(.+)$/.exec(String(value));
            if (!match || !doc.components?.schemas?.[match[1]]) unresolved.push(String(value));
          } else walk(value);
        }
      }
    };
    walk(doc.paths);
    walk(doc.components);
    assert.deepEqual(unresolved, []);
  });

  it('documents every registered route with its method', () => {
    assert.ok(routes.length >= 20, `collected ${routes.length} routes`);
    const missing = routes
      .filter((r) => r.url !== '/openapi.json')
      .filter((r) => !doc.paths[toOpenApiPath(r.url)]?.[r.method])
      .map((r) => `${r.method.toUpperCase()} ${r.url}`);
    assert.deepEqual(missing, []);
  });

  it('documents nothing that is not a route', () => {
    const registered = new Set(routes.map((r) => `${r.method} ${toOpenApiPath(r.url)}`));
    const extra: string[] = [];
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(item)) if (!registered.has(`${method} ${path}`)) extra.push(`${method} ${path}`);
    }
    assert.deepEqual(extra, []);
  });

  it('gives every operation its ErrorBody responses, and bearer security unless public', () => {
    assert.deepEqual(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer', description: 'An API key: plk_…' });
    assert.deepEqual(doc.security, [{ bearer: [] }]);
    for (const r of routes.filter((x) => x.url !== '/openapi.json')) {
      const op = doc.paths[toOpenApiPath(r.url)][r.method];
      const name = `${r.method} ${r.url}`;
      assert.equal(op.responses['4XX']?.content['application/json'].schema.$ref, '#/components/schemas/ErrorBody', name);
      assert.equal(op.responses['5XX']?.content['application/json'].schema.$ref, '#/components/schemas/ErrorBody', name);
      // A redirect flow (the Git app install, the OAuth login and its callbacks) succeeds with its 302.
      assert.ok(
        Object.keys(op.responses).some((code) => /^(2\d\d|302)$/.test(code)),
        `${name} has a success response`,
      );
      if (r.public) assert.deepEqual(op.security, [], name);
      else assert.equal(op.security, undefined, name);
    }
  });

  it('documents request bodies and the {data} envelope of the identity resources', () => {
    const create = doc.paths['/organizations'].post;
    const body = create.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['data']);
    assert.equal(body.additionalProperties, false);
    assert.deepEqual(body.properties.data.required.sort(), ['billingEmail', 'name']);
    assert.equal(create.responses['201'].content['application/json'].schema.properties.data.$ref, '#/components/schemas/Organization');
    const list = doc.paths['/memberships'].get;
    const query = list.parameters.filter((p: { in: string }) => p.in === 'query');
    assert.deepEqual(query.map((p: { name: string }) => p.name).sort(), ['cursor', 'limit', 'order']);
    for (const name of ['ErrorBody', 'Principal', 'Organization', 'Membership', 'ServiceAccount', 'ApiKey', 'CreatedApiKey', 'User', 'UserAuthSettings']) {
      assert.ok(doc.components.schemas[name], name);
    }
  });
});
