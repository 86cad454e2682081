import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { deriveOperationId, derivedErrorStatuses, documentRoute, nameDiscriminatedVariants } from './openapi.ts';

describe('deriveOperationId', () => {
  it('names collections, items, nested collections and one-word actions as a person would', () => {
    assert.equal(deriveOperationId('GET', '/stacks'), 'listStacks');
    assert.equal(deriveOperationId('POST', '/stacks'), 'createStack');
    assert.equal(deriveOperationId('GET', '/stacks/:id'), 'getStack');
    assert.equal(deriveOperationId('PATCH', '/stacks/:id'), 'updateStack');
    assert.equal(deriveOperationId('DELETE', '/stacks/:id'), 'deleteStack');
    assert.equal(deriveOperationId('POST', '/default-value-definitions'), 'createDefaultValueDefinition');
    assert.equal(deriveOperationId('GET', '/audit-webhook-deliveries'), 'listAuditWebhookDeliveries');
    assert.equal(deriveOperationId('GET', '/stacks/:id/state-versions'), 'listStackStateVersions');
    assert.equal(deriveOperationId('GET', '/stacks/:id/state-versions/:versionId'), 'getStackStateVersion');
    assert.equal(deriveOperationId('PUT', '/stacks/:id/sensitive-variables/:name'), 'setStackSensitiveVariable');
    assert.equal(deriveOperationId('POST', '/pipeline-runs/:id/cancel'), 'cancelPipelineRun');
  });
});

describe('documentRoute', () => {
  const jsonPlugin = { hasContentTypeParser: (type: string) => type === 'application/json' } as unknown as FastifyInstance;
  const route = (url: string, schema: Record<string, unknown> = {}) =>
    ({ method: 'GET', url, schema, config: {}, handler: () => {} }) as unknown as RouteOptions;

  it('refuses a route whose operationId is taken, and one that is not camelCase', () => {
    const taken = new Set<string>();
    documentRoute(jsonPlugin, route('/stacks'), taken);
    assert.throws(() => documentRoute(jsonPlugin, route('/twin', { operationId: 'listStacks' }), taken), /operationId listStacks is taken/);
    assert.throws(() => documentRoute(jsonPlugin, route('/snake', { operationId: 'list_snakes' }), taken), /not camelCase/);
  });

  it('lets the route declare its own error responses over the derived ones, and drop one it never answers', () => {
    const declared = route('/webhooks/:id', { response: { 401: { $ref: 'ErrorBody#', description: 'unsigned' }, 404: false } });
    documentRoute(jsonPlugin, declared, new Set());
    const response = declared.schema?.response as Record<string, { description: string }>;
    assert.equal(response[401].description, 'unsigned');
    assert.equal(response[404], undefined);
    assert.ok(response[400] && response[500]);
  });
});

describe('derivedErrorStatuses', () => {
  it('gives an authenticated read with a path id 400, 401, 403, 404, 429 and 500, and no body errors', () => {
    assert.deepEqual(derivedErrorStatuses({ method: 'GET', url: '/stacks/:id', schema: { params: {} }, config: {} }), [400, 401, 403, 404, 429, 500]);
  });

  it('gives a body 413 and 415, and a body that names a resource 404', () => {
    const schema = { body: { properties: { data: { properties: { projectId: { type: 'string' }, givenId: { type: 'string' } } } } } };
    assert.deepEqual(derivedErrorStatuses({ method: 'POST', url: '/environments', schema, config: {} }), [400, 401, 403, 404, 413, 415, 429, 500]);
    const named = { body: { properties: { data: { properties: { givenId: { type: 'string' } } } } } };
    assert.ok(!derivedErrorStatuses({ method: 'POST', url: '/projects', schema: named, config: {} }).includes(404));
  });

  it('gives a public route without a credential no 401 or 403, and a plugin that takes any body no 415', () => {
    assert.deepEqual(derivedErrorStatuses({ method: 'GET', url: '/health', config: { public: true } }), [400, 429, 500]);
    const backend = derivedErrorStatuses({ method: 'POST', url: '/state-backend/:workspace', config: { public: true, runCredentials: true } }, true);
    assert.deepEqual(backend, [400, 401, 403, 404, 413, 429, 500]);
  });
});

describe('nameDiscriminatedVariants', () => {
  it('makes each inline variant a component and maps the discriminator to it', () => {
    const variant = (type: string) => ({ type: 'object', properties: { type: { type: 'string', enum: [type] } } });
    const doc = { components: { schemas: { Shape: { discriminator: { propertyName: 'type' }, oneOf: [variant('circle'), variant('key_value')] } } } };
    const named = nameDiscriminatedVariants(doc).components.schemas as Record<string, any>;
    assert.deepEqual(named.Shape.oneOf, [{ $ref: '#/components/schemas/ShapeCircle' }, { $ref: '#/components/schemas/ShapeKeyValue' }]);
    assert.deepEqual(named.Shape.discriminator.mapping, { circle: '#/components/schemas/ShapeCircle', key_value: '#/components/schemas/ShapeKeyValue' });
    assert.deepEqual(named.ShapeCircle, variant('circle'));
  });
});
