import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { INPUT_TYPES } from '../src/inputs/inputs.schema.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

describe('the catalogue in the OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  before(async () => {
    t = await startTestApp();
    doc = (await t.call('GET', '/openapi.json', { token: null })).body;
  });
  after(() => t.close());

  it('documents every catalogue endpoint', () => {
    const expected: Record<string, string[]> = {};
    for (const plural of ['projects', 'environments', 'cloud-accounts', 'execution-environments', 'default-value-definitions', 'default-values']) {
      expected[`/${plural}`] = ['get', 'post'];
      expected[`/${plural}/{id}`] = ['delete', 'get', 'patch'];
    }
    expected['/environments/{id}/resolved-default-values'] = ['get'];
    for (const [path, methods] of Object.entries(expected)) {
      assert.ok(doc.paths[path], `${path} is missing`);
      for (const method of methods) assert.ok(doc.paths[path][method], `${method.toUpperCase()} ${path} is missing`);
    }
  });

  it('InputProperty is one component with all fourteen variants, each named and mapped by type, and definitions use it', () => {
    const { discriminator, oneOf } = doc.components.schemas.InputProperty;
    assert.equal(discriminator.propertyName, 'type');
    const variants = oneOf.map((v: { $ref: string }) => doc.components.schemas[v.$ref.replace('#/components/schemas/', '')]);
    assert.deepEqual(variants.map((v: any) => v.properties.type.enum[0]).sort(), [...INPUT_TYPES].sort());
    for (const [type, ref] of Object.entries<string>(discriminator.mapping)) {
      assert.equal(doc.components.schemas[ref.replace('#/components/schemas/', '')].properties.type.enum[0], type);
    }
    assert.equal(Object.keys(discriminator.mapping).length, INPUT_TYPES.length);
    const body = doc.paths['/default-value-definitions'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(body.properties.data.properties.schema, { $ref: '#/components/schemas/InputProperty' });
  });

  it('the execution environment response has every field as required, LOCAL ones included', () => {
    const ee = doc.components.schemas.ExecutionEnvironment;
    for (const f of [
      'cloudAccountId',
      'createdAt',
      'givenId',
      'id',
      'name',
      'organizationId',
      'region',
      'securityGroupId',
      'subnetId',
      'type',
      'updatedAt',
      'vpcId',
    ]) {
      assert.ok(ee.required.includes(f), f);
    }
  });
});
