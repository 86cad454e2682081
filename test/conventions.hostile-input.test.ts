import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, serviceAccountCaller } from './helpers/callers.ts';
import { createPipeline, insertRun } from './pipelines.fixtures.ts';

/** Hostile requests that could end in a 500 or be silently bent (NUL bytes, lone surrogates, out-of-range integers, deep nesting, prototype keys, bad encodings): each must be a 4xx ErrorBody. */
describe('hostile input is a 4xx ErrorBody, never a 500', () => {
  let t: TestApp;
  let projectId: string;
  let environmentId: string;
  let stackId: string;
  let runId: string;
  before(async () => {
    t = await startTestApp();
    projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'infra', name: 'Infra' } } })).body.data.id;
    environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'Prod' } } })).body.data.id;
    stackId = (await t.call('POST', '/stacks', { body: { data: { projectId, environmentId, name: 'net' } } })).body.data.id;
    const pipeline = await createPipeline(t);
    runId = await insertRun(t, pipeline, 'SUCCEEDED');
  });
  after(() => t.close());

  const problemsOf = (res: { body: { details?: { items?: string[] }[] } }) => (res.body.details ?? []).flatMap((d) => d.items ?? []);

  it('a NUL in a body text field is 400 naming the field by JSON Pointer', async () => {
    const cases: [string, string, unknown, string][] = [
      ['POST', '/projects', { givenId: 'p1', name: 'a\u0000b' }, 'body/data/name'],
      ['POST', '/projects', { givenId: 'p1', name: 'P', description: '\u0000' }, 'body/data/description'],
      ['POST', '/stacks', { projectId, environmentId, name: 's', variables: { region: 'eu\u0000' } }, 'body/data/variables/region'],
      ['POST', `/stacks/${stackId}/pipeline-run`, { inputs: { x: ['ok', '\u0000'] } }, 'body/data/inputs/x/1'],
      [
        'POST',
        '/pipelines',
        { name: 'p', config: { steps: [{ id: 'a', name: 'A', type: 'script', with: { command: 'echo \u0000' } }] } },
        'body/data/config/steps/0/with/command',
      ],
      ['POST', '/stacks', { projectId, environmentId, name: 's', variables: { 'k\u0000': 'v' } }, 'body/data/variables/k\u0000'],
    ];
    for (const [method, url, data, field] of cases) {
      const res = await t.call(method as 'POST', url, { body: { data } });
      assertError(res, 400, 'Api:Request:INVALID');
      assert.ok(
        problemsOf(res).some((p) => p.startsWith(`${field}: `) && p.includes('NUL')),
        `${url}: ${JSON.stringify(res.body)}`,
      );
    }
  });

  it('a lone surrogate in a jsonb field is 400 naming the field (not stored as U+FFFD either)', async () => {
    const cases: [string, string, unknown, string][] = [
      ['POST', '/stacks', { projectId, environmentId, name: 's', variables: { v: '\ud800' } }, 'body/data/variables/v'],
      ['PATCH', `/stacks/${stackId}`, { variables: { v: 'x\udc00' } }, 'body/data/variables/v'],
      ['POST', `/stacks/${stackId}/pipeline-run`, { inputs: { i: '\ud800' } }, 'body/data/inputs/i'],
      ['POST', '/projects', { givenId: 'p2', name: 'lone \ud800' }, 'body/data/name'],
    ];
    for (const [method, url, data, field] of cases) {
      // JSON.stringify escapes a lone surrogate as \ud800, exactly what a hostile client sends.
      const res = await t.call(method as 'POST', url, { body: { data } });
      assertError(res, 400, 'Api:Request:INVALID');
      assert.ok(
        problemsOf(res).some((p) => p.startsWith(`${field}: `) && p.includes('surrogate')),
        `${url}: ${JSON.stringify(res.body)}`,
      );
    }
  });

  it('a NUL in a path or query parameter, or in a cursor, is 400', async () => {
    assertError(await t.call('GET', '/projects/a%00b'), 400, 'Api:Request:INVALID');
    assertError(await t.call('GET', '/environments?projectId=%00'), 400, 'Api:Request:INVALID');
    assertError(await t.call('GET', '/stacks?projectId=x%00'), 400, 'Api:Request:INVALID');
    const forged = Buffer.from(JSON.stringify({ k: 'a\u0000b' })).toString('base64url');
    assertError(await t.call('GET', `/projects?cursor=${forged}`), 400, 'Api:Cursor:INVALID');
  });

  it('a URL that is not valid percent-encoded UTF-8 is a 400 ErrorBody, and a missing organization a 404 even for a super-administrator', async () => {
    for (const url of ['/projects/%ED%A0%80', '/projects/%FF', `/projects/${'x'.repeat(120)}`]) {
      const res = await t.call('GET', url);
      assertError(res, 400, 'Api:Request:INVALID');
    }
    assertError(await t.call('PATCH', '/organizations/99999999999999999999', { body: { data: { name: 'x' } } }), 404, 'Api:Organization:NOT_FOUND');
  });

  it('integers past PostgreSQL range are 400, and a huge numeric transitions cursor too', async () => {
    assertError(await t.call('GET', `/pipeline-runs/${runId}/step-executions?attemptEpoch=2147483648`), 400, 'Api:Request:INVALID');
    assertError(await t.call('GET', `/pipeline-runs/${runId}/step-executions?attemptEpoch=99999999999999999999`), 400, 'Api:Request:INVALID');
    assertError(await t.call('GET', '/projects?limit=2147483648'), 400, 'Api:Request:INVALID');
    for (const k of ['99999999999999999999', '9223372036854775808', '-1', '1e5']) {
      const cursor = Buffer.from(JSON.stringify({ k })).toString('base64url');
      assertError(await t.call('GET', `/pipeline-runs/${runId}/transitions?cursor=${cursor}`), 400, 'Api:Cursor:INVALID');
    }
    assert.equal((await t.call('GET', `/pipeline-runs/${runId}/step-executions?attemptEpoch=2147483647`)).status, 200);
  });

  it('JSON nested 10,000 levels in a free-form field is 400 before any validator or clone runs', async () => {
    const deep = '['.repeat(10000) + ']'.repeat(10000);
    const bodies: [string, string, string][] = [
      ['POST', '/stacks', `{"data":{"projectId":"${projectId}","environmentId":"${environmentId}","name":"s","variables":{"v":${deep}}}}`],
      ['PATCH', `/stacks/${stackId}`, `{"data":{"variables":{"v":${deep}}}}`],
      ['POST', `/stacks/${stackId}/pipeline-run`, `{"data":{"inputs":{"v":${deep}}}}`],
      ['POST', '/pipelines', `{"data":{"name":"p","config":{"steps":${deep}}}}`],
      ['POST', '/pipeline-versions', `{"data":{"pipelineId":"x","config":{"steps":[{"with":${deep}}]}}}`],
    ];
    for (const [method, url, rawBody] of bodies) {
      const started = Date.now();
      assertError(await t.call(method as 'POST', url, { rawBody }), 400, 'Api:Request:TOO_DEEP');
      assert.ok(Date.now() - started < 1000);
    }
    // Depth 64 is allowed; brackets inside strings do not count.
    const ok = await t.call('PATCH', `/stacks/${stackId}`, { rawBody: `{"data":{"variables":{"v":${'['.repeat(60)}"[[[[[[[[[[[[["${']'.repeat(60)}}}}` });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });

  it('__proto__ and constructor keys are 400 like any unknown key, anywhere in a body', async () => {
    for (const rawBody of [
      '{"data": {"givenId": "pp", "name": "P", "__proto__": {"isSuperAdmin": true}}}',
      '{"data": {"givenId": "pp", "name": "P", "constructor": {"prototype": {"x": 1}}}}',
      '{"__proto__": {}, "data": {"givenId": "pp", "name": "P"}}',
    ]) {
      const res = await t.call('POST', '/projects', { rawBody });
      assertError(res, 400, 'Api:Request:INVALID');
      assert.ok(
        problemsOf(res).some((p) => /__proto__|constructor/.test(p)),
        JSON.stringify(res.body),
      );
    }
    const nested = await t.call('PATCH', `/stacks/${stackId}`, { rawBody: '{"data": {"variables": {"a": {"__proto__": {"polluted": 1}}}}}' });
    assertError(nested, 400, 'Api:Request:INVALID');
    assert.ok(problemsOf(nested).includes('body/data/variables/a/__proto__: unknown or read-only field'));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('Content-Type text/plain is 415, not a schema error', async () => {
    const res = await t.call('POST', '/projects', { rawBody: '{"data":{"givenId":"tp","name":"T"}}', headers: { 'content-type': 'text/plain' } });
    assertError(res, 415, 'Api:Request:UNSUPPORTED_MEDIA_TYPE');
  });

  it('an X-Organization-Id that is present but invalid is 400, never ignored', async () => {
    const sa = await serviceAccountCaller(t, 'VIEWER');
    for (const value of ['a'.repeat(65), '', 'has space', 'é']) {
      for (const token of [t.adminToken, sa.token]) {
        const res = await t.call('GET', '/auth/whoami', { token, headers: { 'x-organization-id': value } });
        assertError(res, 400, 'Api:Request:INVALID_HEADER');
      }
    }
  });
});
