import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { RoutePlugin } from '../src/platform/http/app.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

/**
 * Records every route registered after it. Marked like fastify-plugin does, so its hook lives in the
 * root context and sees the routes of every plugin that follows.
 */
function routeCollector(into: { method: string; url: string; public: boolean }[]): RoutePlugin {
  const plugin: RoutePlugin = async (app) => {
    app.addHook('onRoute', (route) => {
      // The web console's pages and assets are not API operations: hidden from the document on purpose.
      if ((route.schema as { hide?: boolean } | undefined)?.hide && route.url !== '/openapi.json') return;
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

  /** Every documented operation, with the route it documents. */
  const operations = () =>
    routes
      .filter((r) => r.url !== '/openapi.json')
      .map((r) => ({ ...r, name: `${r.method.toUpperCase()} ${r.url}`, op: doc.paths[toOpenApiPath(r.url)][r.method] }));

  it('names every operation with a unique camelCase operationId, as a person would', () => {
    const ids = operations().map(({ op, name }) => {
      assert.match(String(op.operationId), /^[a-z][a-zA-Z0-9]*$/, name);
      return op.operationId;
    });
    assert.equal(new Set(ids).size, ids.length, `duplicates: ${ids.filter((id, i) => ids.indexOf(id) !== i)}`);
    const expected: Record<string, string> = {
      'get /stacks': 'listStacks',
      'get /stacks/{id}': 'getStack',
      'post /stacks': 'createStack',
      'patch /stacks/{id}': 'updateStack',
      'delete /stacks/{id}': 'deleteStack',
      'post /stacks/{id}/pipeline-run': 'triggerStackRun',
      'get /stacks/{id}/state-versions': 'listStackStateVersions',
      'post /pipeline-runs/{id}/cancel': 'cancelPipelineRun',
      'get /pipeline-runs/{id}/step-executions': 'listStepExecutions',
      'post /pipeline-step-executions/{id}/approve': 'approveStepExecution',
      'get /pipeline-step-executions/{id}/logs': 'getStepExecutionLogs',
      'get /auth/whoami': 'whoami',
    };
    for (const [key, operationId] of Object.entries(expected)) {
      const [method, path] = key.split(' ');
      assert.equal(doc.paths[path][method].operationId, operationId, key);
    }
  });

  it('lists each error status a route can answer, as an ErrorBody, with no catch-all', () => {
    const bodyMethods = new Set(['post', 'put', 'patch', 'delete']);
    for (const { op, name, method, url, public: isPublic } of operations()) {
      const statuses = Object.keys(op.responses);
      assert.deepEqual(
        statuses.filter((s) => !/^\d{3}$/.test(s)),
        [],
        `${name} has a catch-all`,
      );
      const expected = ['400', '429', '500'];
      const stateBackend = url.startsWith('/state-backend/');
      if (!isPublic || stateBackend) expected.push('401', '403');
      // The inbound event routes answer an unknown id as an unverified delivery: 401, never 404.
      if (url.includes(':') && url !== '/webhooks/git/:codeSourceId' && url !== '/cloud-accounts/:id/events') expected.push('404');
      if (bodyMethods.has(method)) expected.push('400', '413', ...(stateBackend ? [] : ['415']));
      for (const status of expected) assert.ok(statuses.includes(status), `${name} lacks ${status}`);
      if (stateBackend) assert.ok(!statuses.includes('415'), `${name} takes any content type`);
      // Answers with bodies of their own: the lock holder (423) of the state backend, the degraded health (503).
      const ownBody = (s: string) => (stateBackend && s === '423') || (url === '/health' && s === '503');
      for (const status of statuses.filter((s) => Number(s) >= 400 && !ownBody(s))) {
        const response = op.responses[status];
        assert.equal(response.content['application/json'].schema.$ref, '#/components/schemas/ErrorBody', `${name} ${status}`);
        assert.ok(response.description && response.description !== 'Default Response', `${name} ${status} is described`);
      }
      assert.equal(op.responses['429'].headers['Retry-After'].schema.type, 'integer', name);
      // A redirect flow (the Git app install, the OAuth login and its callbacks) succeeds with its 302.
      assert.ok(
        statuses.some((code) => /^(2\d\d|302)$/.test(code)),
        `${name} has a success response`,
      );
    }
    const statusesOf = (method: string, path: string) => Object.keys(doc.paths[path][method].responses);
    // What only the services know, declared by their routes.
    assert.ok(statusesOf('post', '/stacks').includes('409') && statusesOf('post', '/stacks').includes('422'));
    assert.ok(statusesOf('post', '/pipeline-step-executions/{id}/approve').includes('409'));
    assert.ok(statusesOf('get', '/code-source/{id}/branches').includes('502') && statusesOf('get', '/code-source/{id}/branches').includes('504'));
    assert.ok(statusesOf('post', '/webhooks/git/{codeSourceId}').includes('401'));
    assert.ok(!statusesOf('post', '/webhooks/git/{codeSourceId}').includes('404'), 'an unknown code source is a 401');
    // And nothing a route cannot answer.
    assert.deepEqual(statusesOf('get', '/health').sort(), ['200', '400', '429', '500', '503']);
    assert.ok(!statusesOf('get', '/pipeline-runs').includes('404') && !statusesOf('get', '/pipeline-runs').includes('415'));
    assert.match(doc.paths['/webhooks/git/{codeSourceId}'].post.responses['413'].description, /5 MiB/);
    assert.match(doc.paths['/projects'].post.responses['415'].description, /Content-Type: application\/json/);
  });

  it('answers a body that is not JSON with a 415 that names the content type to send', async () => {
    const res = await t.call('POST', '/projects', { rawBody: 'name=web', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(res.status, 415);
    assert.equal(res.body.code, 'Api:Request:UNSUPPORTED_MEDIA_TYPE');
    assert.match(res.body.message, /Content-Type: application\/json/);
  });

  it('uses bearer security unless public, and HTTP Basic or bearer on the state backend', () => {
    assert.deepEqual(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer', description: 'An API key: plk_…' });
    assert.equal(doc.components.securitySchemes.basic.scheme, 'basic');
    assert.deepEqual(doc.security, [{ bearer: [] }]);
    for (const { op, name, url, public: isPublic } of operations()) {
      if (url.startsWith('/state-backend/')) assert.deepEqual(op.security, [{ basic: [] }, { bearer: [] }], name);
      else if (isPublic) assert.deepEqual(op.security, [], name);
      else assert.equal(op.security, undefined, name);
    }
  });

  it('declares the X-Organization-Id header, optional and described, wherever a credential is taken', () => {
    for (const { op, name, url, public: isPublic } of operations()) {
      const header = (op.parameters ?? []).find((p: { in: string; name: string }) => p.in === 'header' && p.name === 'X-Organization-Id');
      if (isPublic && !url.startsWith('/state-backend/')) {
        assert.equal(header, undefined, name);
        continue;
      }
      assert.ok(header, `${name} lacks X-Organization-Id`);
      assert.equal(header.required, false, name);
      assert.match(header.description, /organization/, name);
      assert.equal(header.schema.maxLength, 64, name);
    }
  });

  it('shows examples on the main operations, and every example validates against its own schema', () => {
    const withExamples: [string, string, ('request' | number)[]][] = [
      ['post', '/organizations', ['request', 201]],
      ['post', '/projects', ['request', 201]],
      ['post', '/environments', ['request', 201]],
      ['post', '/stacks', ['request', 201]],
      ['post', '/stacks/{id}/pipeline-run', ['request', 201]],
      ['get', '/pipeline-runs', [200]],
      ['get', '/pipeline-runs/{id}', [200]],
      ['get', '/pipeline-runs/{id}/step-executions', [200]],
      ['post', '/pipeline-step-executions/{id}/approve', [200]],
      ['get', '/pipeline-step-executions/{id}/logs', [200]],
    ];
    for (const [method, path, parts] of withExamples) {
      const op = doc.paths[path][method];
      for (const part of parts) {
        const media = part === 'request' ? op.requestBody.content['application/json'] : op.responses[part].content['application/json'];
        assert.ok(media.example !== undefined || media.examples !== undefined, `${method} ${path} ${part} has no example`);
      }
    }
    const ajv = new Ajv.default({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addFormat('int32', true);
    let checked = 0;
    const check = (media: { schema: object; example?: unknown; examples?: Record<string, { value: unknown }> }, where: string) => {
      const examples = [...(media.example === undefined ? [] : [media.example]), ...Object.values(media.examples ?? {}).map((e) => e.value)];
      if (examples.length === 0) return;
      const validate = ajv.compile({ allOf: [media.schema], components: doc.components });
      for (const example of examples) {
        assert.ok(validate(example), `${where}: ${JSON.stringify(validate.errors)}`);
        checked++;
      }
    };
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) check(media, `${method} ${path} request ${type}`);
        for (const [status, response] of Object.entries<any>(op.responses)) {
          for (const [type, media] of Object.entries<any>(response.content ?? {})) check(media, `${method} ${path} ${status} ${type}`);
        }
      }
    }
    assert.ok(checked >= 15, `${checked} examples checked`);
    // The same check refuses an example that does not match: a stack without its fields.
    const created = doc.paths['/stacks'].post.responses['201'].content['application/json'];
    assert.equal(ajv.compile({ allOf: [created.schema], components: doc.components })({ data: { id: 'x' } }), false);
  });

  it('passes the Redocly linter with its recommended rules', async () => {
    const config = await createConfig({
      extends: ['recommended'],
      rules: {
        // The Git OAuth login, the Git app install and their return legs succeed with a 302 to the
        // provider or back to the caller's page: they have no 2XX response by design.
        'operation-2xx-response': 'off',
        // Plinth is not published under a licence: there is none to name.
        'info-license': 'off',
      },
    });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config });
    const described = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    assert.deepEqual(described, []);
  });

  it('documents request bodies and the {data} envelope of the identity resources', () => {
    const create = doc.paths['/organizations'].post;
    const body = create.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['data']);
    assert.equal(body.additionalProperties, false);
    assert.deepEqual(body.properties.data.required.sort(), ['billingEmail', 'name']);
    assert.equal(create.responses['201'].content['application/json'].schema.properties.data.$ref, '#/components/schemas/Organization');
    const list = doc.paths['/memberships'].get;
    assert.deepEqual(
      list.parameters
        .filter((p: { in: string }) => p.in === 'query')
        .map((p: { name: string }) => p.name)
        .sort(),
      ['cursor', 'limit', 'order'],
    );
    for (const name of ['ErrorBody', 'Principal', 'Organization', 'Membership', 'ServiceAccount', 'ApiKey', 'CreatedApiKey', 'User', 'UserAuthSettings']) {
      assert.ok(doc.components.schemas[name], name);
    }
  });
});
