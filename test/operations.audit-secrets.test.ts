import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { TSchema } from '@sinclair/typebox';
import Fastify from 'fastify';
import { sql } from 'kysely';
import { deliverDueWebhooks } from '../src/audit/audit-delivery.ts';
import { auditSpecOf } from '../src/platform/audit/actions.ts';
import { allowlistProblems } from '../src/platform/audit/diff.ts';
import { installAudit } from '../src/platform/audit/recorder.ts';
import type { Db } from '../src/platform/db/db.ts';
import type { App } from '../src/platform/http/app.ts';
import { ALLOW_EVERYTHING } from '../src/platform/outbound/address-policy.ts';
import { TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { LOOPBACK_GIT_ENV, startEngineTestApp } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, MODULES } from './helpers/modules.ts';

// A module version is published from the tests' Git server on loopback.
Object.assign(process.env, LOOPBACK_GIT_ENV);

/** What no audit row, export or webhook delivery may ever hold: it stands for a token, a password, a sensitive value. */
const MARKER = 'plinthsweepmarker7c1x';
/**
 * What an allowlisted text carries: the marker only where the audit log must drop it (a URL's
 * user-info, query and fragment), so that an allowlisted field is recorded and still shows no marker.
 */
const CLEANABLE = `https://a:${MARKER}@h.example/p?t=${MARKER}#${MARKER}`;
const CLEANED = 'https://h.example/p';
/** What a field kept to its URL's origin (`webhookUrl:origin`) keeps of CLEANABLE. */
const ORIGIN = 'https://h.example';
/** An object the schema leaves open (variables, inputs, a sensitive value): the marker at every depth. */
const OPEN_OBJECT = { sweepSecret: MARKER, sweepList: [MARKER, { deep: MARKER }] };
const ROLE_ARN = 'arn:aws:iam::123456789012:role/plinth';
const PIPELINE = { steps: [{ id: 'build', name: 'Build', type: 'script', with: { command: `echo ${MARKER}` } }] };

interface RouteEntry {
  method: string;
  url: string;
  action: string;
  fields: readonly string[];
  body: TSchema | undefined;
}

type Mode = 'success' | 'refused';

let unique = 0;

/** An allowlisted field's path, without the mode that may follow it (`webhookUrl:origin`). */
function pathOf(field: string): string {
  return field.split(':')[0];
}

function allowed(fields: readonly string[], path: string): boolean {
  const paths = fields.map(pathOf);
  return paths.includes(path) || paths.includes(path.replace(/\[\]$/, ''));
}

function sampleString(schema: TSchema, isAllowed: boolean, mode: Mode): string {
  if (mode === 'refused') return isAllowed ? CLEANABLE : MARKER;
  const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern) : undefined;
  const fits = (value: string) => !pattern || pattern.test(value);
  if (Array.isArray(schema.enum)) return String(schema.enum[0]);
  if (schema.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
  if (schema.format === 'email') return isAllowed ? `sweep-${++unique}@example.com` : `${MARKER}@example.com`;
  if (isAllowed) return fits(CLEANABLE) ? CLEANABLE : `sweep${++unique}`;
  if (fits(MARKER)) return MARKER;
  return `https://${MARKER}.example/${MARKER}`;
}

/**
 * sample is a body for `schema`: the marker in every string it may hold (nested objects and lists
 * included), a cleanable URL in every allowlisted text. A successful request's body also satisfies
 * the schema where it can (an enum's first value, a date); a refused one does not try.
 */
function sample(schema: TSchema, fields: readonly string[], mode: Mode, path = ''): unknown {
  const options = (schema.anyOf ?? schema.oneOf) as TSchema[] | undefined;
  if (options) return sample(options.find((o) => o.type !== 'null') ?? options[0], fields, mode, path);
  const at = (key: string) => (path ? `${path}.${key}` : key);
  switch (schema.type) {
    case 'object': {
      const props = Object.entries((schema.properties ?? {}) as Record<string, TSchema>);
      const out: Record<string, unknown> = Object.fromEntries(props.map(([key, child]) => [key, sample(child, fields, mode, at(key))]));
      return props.length === 0 || schema.additionalProperties === true ? { ...OPEN_OBJECT, ...out } : out;
    }
    case 'array':
      return [sample(schema.items as TSchema, fields, mode, `${path}[]`)];
    case 'string':
      return sampleString(schema, allowed(fields, path), mode);
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return false;
    default:
      return OPEN_OBJECT;
  }
}

/** What a route's successful request needs beyond its sample: real ids in the path and body, values the service checks. */
interface Fixture {
  path?: string;
  set?: Record<string, unknown>;
  omit?: string[];
}

/** Audited routes with a body whose successful request the sweep cannot make, and why. */
const NO_SUCCESS_CASE: Record<string, string> = {
  'POST /webhooks/git/:codeSourceId': 'a Git server calls it with no principal: its rows are never written (docs/operations.md#audit-log)',
  'POST /cloud-accounts/:id/events': 'an EventBridge API destination calls it with no principal: its rows are never written (docs/operations.md#audit-log)',
};

/** A body of the route's schema, its `data` sampled with the allowlist's paths (which start inside `data`). */
function sampleBody(body: TSchema, fields: readonly string[], mode: Mode): { data: Record<string, unknown> } {
  const data = body.properties?.data as TSchema | undefined;
  return { data: (data ? sample(data, fields, mode) : sample(body, fields, mode)) as Record<string, unknown> };
}

function concrete(url: string): string {
  return url.replace(/:(\w+)/g, 'no-such-id');
}

describe('nothing secret reaches the audit log, its export or its webhook', () => {
  let t: TestApp;
  let git: GitServer;
  let org: string;
  let viewer: string;
  const routes: RouteEntry[] = [];
  const fixtures: Record<string, Fixture> = {};
  const recordRoutes = Object.assign(
    async (app: App) => {
      app.addHook('onRoute', (route) => {
        const methods = Array.isArray(route.method) ? route.method : [route.method];
        const config = route.config as { audit?: string | false; auditFields?: readonly string[] } | undefined;
        for (const method of methods) {
          const spec = auditSpecOf(method, route.url, config?.audit);
          if (spec)
            routes.push({ method, url: route.url, action: spec.action, fields: config?.auditFields ?? [], body: route.schema?.body as TSchema | undefined });
        }
      });
    },
    { [Symbol.for('skip-override')]: true },
  );

  const create = async (url: string, data: Record<string, unknown>): Promise<string> => {
    const res = await t.call('POST', url, { headers: inOrg(org), body: { data } });
    assert.ok(res.status === 201 || res.status === 200, `${url}: ${JSON.stringify(res.body)}`);
    return res.body.data.id;
  };

  before(async () => {
    // The queue's schema is there (a run can be triggered); no worker runs it.
    t = await startEngineTestApp({ routesBefore: [recordRoutes] });
    org = await createOrganization(t, 'Swept');
    viewer = (await serviceAccountCaller(t, 'VIEWER', org)).token;

    const project = await create('/projects', { givenId: 'swept', name: 'Swept' });
    const executionEnvironment = await create('/execution-environments', { givenId: 'local', name: 'Local', type: 'LOCAL' });
    const environment = await create('/environments', { projectId: project, givenId: 'swept', name: 'Swept', executionEnvironmentId: executionEnvironment });
    const codeSource = await create('/code-sources', { name: 'repo', url: 'https://git.example.com/org/repo.git' });
    const source = { codeSourceId: codeSource, ref: 'main', path: 'infra', onPush: 'plan' };
    const stack = await create('/stacks', { projectId: project, environmentId: environment, name: 'Swept', source });
    const cloudAccount = await create('/cloud-accounts', { givenId: 'aws', name: 'AWS', accountId: '123456789012', roleArn: ROLE_ARN });
    const serviceAccount = await create('/service-accounts', { name: 'bot', role: 'MEMBER' });
    const membership = await create('/memberships', { email: 'swept-member@example.com', role: 'MEMBER' });
    const pipeline = await create('/pipelines', { name: 'Swept', config: PIPELINE });
    const definition = await create('/default-value-definitions', { givenId: 'tier', name: 'Tier', schema: { id: 'tier', label: 'Tier', type: 'string' } });
    const defaultValue = await create('/default-values', { defaultValueDefinitionId: definition, parentId: org, value: 'standard' });
    const gitServer = await create('/git-self-hosted-servers', {
      name: 'gl',
      provider: 'GITLAB',
      baseUrl: 'https://gitlab.example.com',
      clientId: 'plinth',
      clientSecret: 'client-secret',
    });
    const local = ['cloudAccountId', 'region', 'vpcId', 'subnetId', 'securityGroupId'];
    git = await startGitServer();
    commitModules(git);
    const modules = await create('/code-sources', { name: 'modules', url: git.repoUrl('public') });
    const moduleSource = { codeSourceId: modules, ref: 'main', path: MODULES.network.path };
    const publish = async (moduleDefinitionId: string, version: string) =>
      create('/module-versions', { moduleDefinitionId, version, source: moduleSource, inputs: MODULES.network.inputs, outputs: MODULES.network.outputs });
    const moduleDefinition = await create('/module-definitions', { type: 'sweep/network', name: 'Network' });
    const moduleVersion = await publish(moduleDefinition, '1.0.0');
    const nextModuleVersion = await publish(moduleDefinition, '1.1.0');
    const draftDefinition = await create('/module-definitions', { type: 'sweep/draft', name: 'Draft' });
    const instance = await create('/module-instances', {
      environmentId: environment,
      moduleVersionId: moduleVersion,
      givenId: 'net',
      name: 'Net',
      values: { name: 'net' },
    });

    Object.assign(fixtures, {
      'POST /service-accounts': {},
      'PATCH /service-accounts/:id': { path: `/service-accounts/${serviceAccount}` },
      'POST /api-keys': { set: { serviceAccountId: serviceAccount }, omit: ['userId'] },
      'POST /organizations': {},
      'PATCH /organizations/:id': { path: `/organizations/${org}` },
      'POST /memberships': {},
      'PATCH /memberships/:id': { path: `/memberships/${membership}` },
      'POST /pipelines': { set: { projectId: project, config: PIPELINE } },
      'PATCH /pipelines/:id': { path: `/pipelines/${pipeline}` },
      'POST /pipeline-versions': { set: { pipelineId: pipeline, config: PIPELINE } },
      'POST /projects': {},
      'PATCH /projects/:id': { path: `/projects/${project}` },
      'POST /environments': { set: { projectId: project, executionEnvironmentId: executionEnvironment } },
      'PATCH /environments/:id': { path: `/environments/${environment}`, set: { executionEnvironmentId: executionEnvironment } },
      'POST /cloud-accounts': { set: { accountId: '123456789012', roleArn: ROLE_ARN } },
      'PATCH /cloud-accounts/:id': { path: `/cloud-accounts/${cloudAccount}`, set: { roleArn: ROLE_ARN } },
      'POST /cloud-accounts/:id/ingest-secret': { path: `/cloud-accounts/${cloudAccount}/ingest-secret` },
      'POST /execution-environments': { set: { type: 'LOCAL', egressAllow: ['example.com'] }, omit: local },
      'PATCH /execution-environments/:id': { path: `/execution-environments/${executionEnvironment}`, set: { egressAllow: ['example.com'] }, omit: local },
      'POST /default-value-definitions': { set: { schema: { id: 'sweep', label: MARKER, type: 'string', default: MARKER } } },
      'PATCH /default-value-definitions/:id': { path: `/default-value-definitions/${definition}`, omit: ['schema'] },
      'POST /default-values': { set: { defaultValueDefinitionId: definition, parentId: project, value: MARKER } },
      'PATCH /default-values/:id': { path: `/default-values/${defaultValue}`, set: { value: MARKER } },
      'POST /stacks': { set: { projectId: project, environmentId: environment, source, pipelines: { change: PIPELINE, destroy: PIPELINE } } },
      'PATCH /stacks/:id': { path: `/stacks/${stack}`, set: { source } },
      'POST /stacks/:id/pipeline-run': { path: `/stacks/${stack}/pipeline-run` },
      'POST /code-sources': {
        set: { url: 'https://git.example.com/org/sweep.git', authType: 'TOKEN' },
        omit: ['gitAppInstallationId', 'gitSelfHostedServerId'],
      },
      'PATCH /code-sources/:id': {
        path: `/code-sources/${codeSource}`,
        set: { url: 'https://git.example.com/org/repo.git', authType: 'TOKEN' },
        omit: ['gitAppInstallationId', 'gitSelfHostedServerId'],
      },
      'POST /git-self-hosted-servers': {},
      'PATCH /git-self-hosted-servers/:id': { path: `/git-self-hosted-servers/${gitServer}` },
      'PUT /stacks/:id/sensitive-variables/:name': { path: `/stacks/${stack}/sensitive-variables/sweep_var` },
      'PATCH /audit-settings': {},
      'POST /module-definitions': { set: { type: 'sweep/created', global: false } },
      'PATCH /module-definitions/:id': { path: `/module-definitions/${moduleDefinition}` },
      'POST /module-versions': { set: { moduleDefinitionId: draftDefinition, version: '1.0.0', source: moduleSource, inputs: [], outputs: [] } },
      'POST /module-versions/:id/deprecate': { path: `/module-versions/${moduleVersion}/deprecate` },
      'POST /domains': { set: { moduleInstanceId: instance, hostname: 'swept.example.com', cloudAccountId: cloudAccount, region: 'us-east-1' } },
      'POST /module-instances': { set: { environmentId: environment, moduleVersionId: nextModuleVersion, givenId: 'swept', values: { name: 'swept' } } },
      'PATCH /module-instances/:id': { path: `/module-instances/${instance}`, set: { values: { name: 'net' } } },
      'POST /module-instances/:id/upgrade': {
        path: `/module-instances/${instance}/upgrade`,
        set: { moduleVersionId: nextModuleVersion, values: { name: 'net' } },
      },
      'POST /module-instances/:id/deploy': { path: `/module-instances/${instance}/deploy` },
      'POST /environments/:id/deploy': { path: `/environments/${environment}/deploy` },
    } satisfies Record<string, Fixture>);
  });
  after(async () => {
    await t.close();
    await git?.close();
  });

  const send = (method: string, url: string, token: string, body: unknown) =>
    t.app.inject({
      method: method as 'POST',
      url,
      headers: { authorization: `Bearer ${token}`, ...inOrg(org), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  const rowOf = async (requestId: unknown) => {
    const { rows } = await sql<any>`select * from audit_events where request_id = ${String(requestId)}`.execute(t.db);
    return rows;
  };

  it("every allowlist names fields of its route's body schema, none of them write-only", () => {
    const listed = routes.filter((r) => r.fields.length > 0);
    assert.ok(listed.length > 25, `${listed.length} routes allowlist fields`);
    for (const route of listed) assert.deepEqual(allowlistProblems(route.body, route.fields), [], `${route.method} ${route.url}`);
  });

  it('the start refuses an allowlist naming a field its body lacks, a write-only field, or a route that is not audited', async () => {
    const body = {
      type: 'object',
      properties: { data: { type: 'object', properties: { name: { type: 'string' }, token: { type: 'string', writeOnly: true } } } },
    };
    for (const [method, auditFields, problem] of [
      ['POST', ['nmae'], /nmae is not a field of its body/],
      ['POST', ['token'], /token is write-only/],
      ['GET', ['name'], /not audited/],
    ] as const) {
      const app = Fastify();
      installAudit(app, {} as Db);
      const schema = method === 'GET' ? {} : { body };
      assert.throws(() => app.route({ method, url: '/x', config: { auditFields }, schema, handler: async () => ({}) }), problem);
      await app.close();
    }
  });

  it("keeps a sensitive variable's value out of its audit row", async () => {
    const fixture = fixtures['PUT /stacks/:id/sensitive-variables/:name'];
    const res = await send('PUT', fixture.path!, t.adminToken, { data: { value: `ghp_${MARKER}` } });
    assert.equal(res.statusCode, 200, res.body);
    const [row] = await rowOf(res.headers['x-request-id']);
    assert.equal(row.outcome, 'SUCCESS');
    assert.equal(row.diff, null);
  });

  it('keeps the token of a code source refused for the credentials in its URL out of its audit row', async () => {
    const res = await send('POST', '/code-sources', t.adminToken, {
      data: { name: 'leaky', url: `https://alice:ghp_${MARKER}@git.example.com/org/repo.git?token=${MARKER}` },
    });
    assert.equal(res.statusCode, 422, res.body);
    const [row] = await rowOf(res.headers['x-request-id']);
    assert.equal(row.outcome, 'FAILURE');
    assert.deepEqual(row.diff, { name: 'leaky', url: 'https://git.example.com/org/repo.git', authType: 'NONE', provider: 'GENERIC' });
  });

  it("keeps only the origin of a webhook's URL, whose path is its secret", async () => {
    const slack = `https://hooks.slack.com/services/T0000/B0000/${MARKER}`;
    for (const [data, status] of [
      [{ webhookUrl: slack, retentionDays: 0 }, 400],
      [{ webhookUrl: slack }, 200],
    ] as const) {
      const res = await send('PATCH', '/audit-settings', t.adminToken, { data });
      assert.equal(res.statusCode, status, res.body);
      const [row] = await rowOf(res.headers['x-request-id']);
      assert.equal(row.diff.webhookUrl, 'https://hooks.slack.com', `${status}`);
    }
  });

  it('sweeps every audited route with the marker in every string of its body, refused and successful, and finds it nowhere', async () => {
    const withBody = routes.filter((r) => r.body && !NO_SUCCESS_CASE[`${r.method} ${r.url}`]);
    const missing = withBody.map((r) => `${r.method} ${r.url}`).filter((key) => !fixtures[key]);
    assert.deepEqual(missing, [], 'every audited route with a body has a fixture for its successful request');

    for (const route of routes) {
      const key = `${route.method} ${route.url}`;
      const fixture: Fixture = fixtures[key] ?? {};
      const path = fixture.path ?? concrete(route.url);
      // A refused body: strings where enums and ids belong (400), or a VIEWER's (403); a route without a
      // body schema gets one anyway, which it must not record either.
      const refused = route.body ? sampleBody(route.body, route.fields, 'refused') : { data: OPEN_OBJECT };
      const payload = route.method === 'GET' ? undefined : refused;
      const denied = await send(route.method, path, viewer, payload);
      assert.ok(denied.statusCode >= 400, `a VIEWER's ${key} is refused: ${denied.statusCode} ${denied.body}`);
      // An unknown field makes the body fail its schema (400); a route without one answers as it does.
      const invalid = await send(route.method, concrete(route.url), t.adminToken, payload && { data: { ...payload.data, sweepUnknown: MARKER } });
      if (!route.body || NO_SUCCESS_CASE[key]) continue;
      assert.equal(invalid.statusCode, 400, `an OWNER's invalid ${key}: ${invalid.body}`);

      const { data } = sampleBody(route.body, route.fields, 'success');
      for (const field of fixture.omit ?? []) delete data[field];
      Object.assign(data, fixture.set ?? {});
      const res = await send(route.method, path, t.adminToken, { data });
      assert.ok(res.statusCode < 300, `${key} succeeded: ${res.statusCode} ${res.body}`);
      const rows = await rowOf(res.headers['x-request-id']);
      assert.equal(rows.length, 1, key);
      const diff = rows[0].diff as Record<string, unknown> | null;
      if (route.fields.length === 0) {
        assert.equal(diff, null, `${key} allowlists nothing and keeps no diff`);
        continue;
      }
      assert.ok(diff, `${key} keeps its allowlisted fields`);
      assert.deepEqual(
        Object.keys(diff).filter((field) => !route.fields.some((f) => pathOf(f).split('.')[0] === field)),
        [],
        `${key} keeps only allowlisted fields`,
      );
      for (const field of route.fields.filter((f) => !f.includes('.') && data[pathOf(f)] === CLEANABLE)) {
        const kept = field.endsWith(':origin') ? ORIGIN : CLEANED;
        assert.equal(diff[pathOf(field)], kept, `${key} keeps ${field} without its URL's credentials`);
      }
    }

    const { rows } = await sql<{ action: string; outcome: string; diff: unknown }>`
      select action, outcome, diff from audit_events e where to_jsonb(e)::text ilike ${`%${MARKER}%`}`.execute(t.db);
    assert.deepEqual(rows, [], 'no audit row holds the marker');

    const exported = await t.app.inject({ method: 'GET', url: '/audit-events/export', headers: { authorization: `Bearer ${t.adminToken}`, ...inOrg(org) } });
    assert.equal(exported.statusCode, 200);
    assert.ok(exported.body.split('\n').length > routes.length * 2, 'the export holds the sweep');
    assert.equal(exported.body.toLowerCase().includes(MARKER), false, 'the export does not hold the marker');
  });

  it('delivers the swept rows to a webhook without the marker', async () => {
    const received: string[] = [];
    const receiver: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(body);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const patch = await t.call('PATCH', '/audit-settings', {
        headers: inOrg(org),
        body: { data: { webhookUrl: url, webhookSecret: 'a-webhook-signing-secret' } },
      });
      assert.equal(patch.status, 200, JSON.stringify(patch.body));
      const options = { outbound: { allow: ALLOW_EVERYTHING }, retryBaseMs: 60_000, timeoutMs: 5000, batchSize: 100 };
      while (await deliverDueWebhooks(t.db, TEST_SECRETS, options)) {}
      const events = received.flatMap((body) => JSON.parse(body).events as { seq: number }[]);
      const { rows } = await sql<{ n: string }>`select count(*) as n from audit_events where organization_id = ${org}`.execute(t.db);
      assert.equal(events.length, Number(rows[0].n), 'every row of the organization was delivered');
      assert.equal(
        received.some((body) => body.toLowerCase().includes(MARKER)),
        false,
        'no delivery holds the marker',
      );
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});
