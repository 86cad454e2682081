import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { newId } from '../src/platform/ids.ts';
import type { App } from '../src/platform/http/app.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { userCaller } from './helpers/callers.ts';
import { validValue } from './fuzz/arbitraries.ts';
import { operationsOf, resolve, urlOf, type OpenApiDoc, type Operation } from './fuzz/openapi.ts';
import { seedTwoOrganizations } from './fuzz/setup.ts';

/**
 * The tenant-isolation sweep, generated from the route table: every route that takes an id, called by
 * callers of one organization with another organization's ids (every kind) in the path, in the body and
 * in the query, answers exactly as it does for an id that does not exist, and changes nothing.
 */
const SEED = 7;
/** A field that names a resource by id: `id` or `…Id`, typed as a plain id (givenId, vpcId and the like have patterns). */
const isReference = (name: string, schema: Record<string, unknown> | undefined) => (name === 'id' || /Id$/.test(name)) && !schema?.pattern;

interface Answer {
  status: number;
  code?: string;
  message?: string;
  data?: unknown;
}

describe('tenant isolation: another organization’s id answers exactly as a missing one, on every route', () => {
  let t: TestApp;
  let doc: OpenApiDoc;
  let ownIds: string[];
  let foreignIds: Record<string, string>;
  let callers: { name: string; token: string }[];
  const registered: string[] = [];
  const recordRoutes = Object.assign(
    async (app: App) => {
      app.addHook('onRoute', (route) => {
        // The web console's pages reach data only through the API (swept here), with the session's key.
        if ((route.schema as { hide?: boolean } | undefined)?.hide && route.url !== '/openapi.json') return;
        const methods = Array.isArray(route.method) ? route.method : [route.method];
        for (const m of methods) registered.push(`${m} ${route.url.replace(/:(\w+)/g, '{$1}')}`);
      });
    },
    // Not encapsulated, so the hook sees the routes every later plugin registers.
    { [Symbol.for('skip-override')]: true },
  );
  let before_: string;

  before(async () => {
    t = await startTestApp({ routesBefore: [recordRoutes] });
    doc = (await t.call('GET', '/openapi.json', { token: null })).body;
    const seeded = await seedTwoOrganizations(t);
    ownIds = Object.values(seeded.own.ids);
    foreignIds = seeded.foreign.ids;
    // Callers bound to one organization: a super-administrator acts in every organization by design.
    const owner = await userCaller(t, 'own-owner@example.com', 'OWNER');
    callers = [
      { name: 'OWNER user', token: owner.token },
      { name: 'MEMBER service account', token: seeded.callers.member },
    ];
    before_ = await digest();
  });
  after(() => t.close());

  const answer = async (method: Operation['method'], url: string, token: string, body?: unknown): Promise<Answer> => {
    const res = await t.call(method, url, { token, body });
    return { status: res.status, code: res.body?.code, message: res.body?.message, data: res.body?.data };
  };
  const same = (foreign: Answer, missing: Answer, foreignId: string, missingId: string, what: string) => {
    assert.equal(foreign.status, missing.status, `${what}: ${JSON.stringify(foreign)} vs missing ${JSON.stringify(missing)}`);
    assert.equal(foreign.code, missing.code, what);
    assert.equal(foreign.message, missing.message?.split(missingId).join(foreignId), what);
    if (foreign.status < 300) assert.deepEqual(foreign.data, missing.data, what);
  };

  /**
   * A digest of every row of every table: the sweep must leave it exactly as it found it. The audit log
   * is left out: it records every attempt, refused ones included, by design (docs/operations.md).
   */
  async function digest() {
    const tables = await sql<{ table_name: string }>`
      select table_name from information_schema.tables
       where table_schema = 'public' and table_type = 'BASE TABLE' and table_name !~ '^audit_(events|chain_heads)' order by 1`.execute(t.db);
    const parts: string[] = [];
    for (const { table_name } of tables.rows) {
      const { rows } = await sql<{
        d: string;
      }>`select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as d from ${sql.table(table_name)} x`.execute(t.db);
      parts.push(`${table_name}:${rows[0].d}`);
    }
    return parts.join('\n');
  }

  /** Bodies its schema accepts, with this organization's ids where ids go, so a request reaches its lookups. */
  const bodiesFor = (op: Operation) => (op.body ? fc.sample(validValue(doc, op.body, { own: ownIds, foreign: [] }), { seed: SEED, numRuns: 30 }) : [undefined]);

  it('the OpenAPI document lists every registered route, so the sweep sees them all', () => {
    assert.ok(registered.length > 40, `${registered.length} routes recorded`);
    const documented = new Set(operationsOf(doc).map((op) => `${op.method} ${op.path}`));
    // OpenAPI 3.0 has no LOCK or UNLOCK: the state backend's lock routes are swept in test/opentofu.state-backend.test.ts.
    const missing = registered.filter((r) => !documented.has(r) && r !== 'GET /openapi.json' && !/^(UN)?LOCK /.test(r));
    assert.deepEqual(missing, []);
  });

  it('an id in the path', async () => {
    let checked = 0;
    for (const op of operationsOf(doc).filter((o) => o.pathParams.length > 0)) {
      for (const caller of callers) {
        const missingId = newId();
        const params = (id: string) => Object.fromEntries(op.pathParams.map((p) => [p, id]));
        // A body that passes the schema, so the answer comes from the lookup and not from validation.
        const bodies = bodiesFor(op);
        let body = bodies[0];
        let missing = await answer(op.method, urlOf(op, params(missingId)), caller.token, body && { ...(body as object) });
        for (const candidate of bodies) {
          if (missing.status !== 400) break;
          body = candidate;
          missing = await answer(op.method, urlOf(op, params(missingId)), caller.token, body);
        }
        for (const [kind, foreignId] of Object.entries(foreignIds)) {
          const foreign = await answer(op.method, urlOf(op, params(foreignId)), caller.token, body);
          same(foreign, missing, foreignId, missingId, `${op.method} ${op.path} as ${caller.name} with the other organization's ${kind}`);
          checked++;
        }
      }
    }
    assert.ok(checked > 300, `${checked} checks`);
  });

  it('an id in the body', async () => {
    let reachedLookup = 0;
    for (const op of operationsOf(doc).filter((o) => o.body && o.pathParams.length === 0)) {
      for (const caller of callers) {
        for (const body of bodiesFor(op).slice(0, 10)) {
          const data = (body as { data?: Record<string, unknown> })?.data;
          if (!data || typeof data !== 'object') continue;
          const fields = resolve(doc, resolve(doc, op.body!).properties?.data ?? {}).properties ?? {};
          for (const field of Object.keys(data).filter((f) => isReference(f, resolve(doc, fields[f] ?? {})))) {
            const missingId = newId();
            const missing = await answer(op.method, op.path, caller.token, { data: { ...data, [field]: missingId } });
            if (missing.status === 400) continue;
            assert.ok(missing.status >= 400, `${op.method} ${op.path} accepted data.${field} naming nothing: ${JSON.stringify(missing)}`);
            reachedLookup++;
            for (const [kind, foreignId] of Object.entries(foreignIds)) {
              const foreign = await answer(op.method, op.path, caller.token, { data: { ...data, [field]: foreignId } });
              same(foreign, missing, foreignId, missingId, `${op.method} ${op.path} as ${caller.name} with data.${field} = the other organization's ${kind}`);
            }
          }
        }
      }
    }
    assert.ok(reachedLookup >= 10, `only ${reachedLookup} bodies reached a lookup`);
  });

  it('an id in the query', async () => {
    let checked = 0;
    const references = (op: Operation) => op.query.filter((q) => isReference(q.name, resolve(doc, q.schema)));
    // The audit log's filters match ids as this organization's own requests named them, this sweep's
    // earlier attempts with the other organization's ids included: those rows are this organization's
    // record of its own callers' input, and say nothing of the other organization.
    const auditLog = (op: Operation) => op.path.startsWith('/audit-events');
    for (const op of operationsOf(doc).filter((o) => references(o).length > 0 && !auditLog(o))) {
      for (const caller of callers) {
        for (const q of references(op)) {
          const path = urlOf(op, Object.fromEntries(op.pathParams.map((p) => [p, ownIds[0]])));
          const missingId = newId();
          const missing = await answer(op.method, `${path}?${q.name}=${missingId}`, caller.token);
          for (const [kind, foreignId] of Object.entries(foreignIds)) {
            const foreign = await answer(op.method, `${path}?${q.name}=${foreignId}`, caller.token);
            same(foreign, missing, foreignId, missingId, `${op.method} ${op.path}?${q.name}= the other organization's ${kind} as ${caller.name}`);
            checked++;
          }
        }
      }
    }
    assert.ok(checked > 50, `${checked} checks`);
  });

  it('and changes nothing: every table is as it was', async () => {
    // Runs last: node:test runs a suite's tests in order, so the digest covers every request above.
    assert.equal(await digest(), before_);
  });
});
