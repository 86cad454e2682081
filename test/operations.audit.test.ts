import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { auditSpecOf } from '../src/platform/audit/actions.ts';
import { auditedInFlight } from '../src/platform/audit/recorder.ts';
import type { App } from '../src/platform/http/app.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';

interface RouteEntry {
  method: string;
  url: string;
  audit?: string | false;
  public: boolean;
}

/** The audit rows of one request, by its request id. */
async function rowsOf(t: TestApp, requestId: string | string[] | undefined) {
  const { rows } = await sql<any>`select * from audit_events where request_id = ${String(requestId)}`.execute(t.db);
  return rows;
}

describe('the audit log', () => {
  let t: TestApp;
  let org: string;
  let viewer: string;
  const routes: RouteEntry[] = [];
  const recordRoutes = Object.assign(
    async (app: App) => {
      app.addHook('onRoute', (route) => {
        const methods = Array.isArray(route.method) ? route.method : [route.method];
        const config = route.config as { audit?: string | false; public?: boolean } | undefined;
        for (const method of methods) routes.push({ method, url: route.url, audit: config?.audit, public: config?.public === true });
      });
    },
    { [Symbol.for('skip-override')]: true },
  );

  before(async () => {
    // A route that allowlists no field of its body: its audit rows keep no diff.
    const secretUpload = async (app: App) => {
      app.post('/test-secret-uploads', { config: { permission: 'read', audit: 'state.upload' } }, async () => ({ data: {} }));
    };
    t = await startTestApp({ routesBefore: [recordRoutes], extraRoutes: [secretUpload] });
    org = await createOrganization(t, 'Audited');
    viewer = (await serviceAccountCaller(t, 'VIEWER', org)).token;
  });
  after(() => t.close());

  it('records a create in the same transaction, with actor, key, resource id, request id and the allowlisted fields as its diff', async () => {
    const res = await t.call('POST', '/projects', {
      headers: { ...inOrg(org), 'user-agent': 'audit-test/1' },
      body: { data: { givenId: 'audited', name: 'Audited' } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const [row] = await rowsOf(t, res.headers['x-request-id']);
    assert.equal(row.action, 'project.create');
    assert.equal(row.resource_type, 'project');
    assert.equal(row.resource_id, res.body.data.id);
    assert.equal(row.outcome, 'SUCCESS');
    assert.equal(row.organization_id, org);
    assert.equal(row.actor_type, 'MEMBERSHIP');
    assert.ok(row.api_key_id);
    assert.equal(row.user_agent, 'audit-test/1');
    assert.deepEqual(row.diff, { givenId: 'audited', name: 'Audited' });

    const key = await t.call('POST', '/api-keys', { headers: inOrg(org), body: { data: { name: 'k' } } });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const [keyRow] = await rowsOf(t, key.headers['x-request-id']);
    assert.equal(keyRow.resource_id, key.body.data.id);
    assert.equal(JSON.stringify(keyRow.diff).includes(key.body.data.token), false, 'a token never reaches the audit log');
  });

  it('keeps no diff for a route that allowlists no field of its body', async () => {
    const res = await t.call('POST', '/test-secret-uploads', { headers: inOrg(org), body: { data: { state: 'the whole state' } } });
    assert.equal(res.status, 200);
    const [row] = await rowsOf(t, res.headers['x-request-id']);
    assert.equal(row.action, 'state.upload');
    assert.equal(row.diff, null);
  });

  it('writes nothing of a change whose audit row cannot be written: they commit together', async () => {
    await sql`create function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'no audit'; end $$`.execute(t.db);
    await sql`create trigger refuse_audit before insert on audit_chain_heads for each row execute function refuse_audit()`.execute(t.db);
    await sql`create trigger refuse_audit_update before update on audit_chain_heads for each row execute function refuse_audit()`.execute(t.db);
    try {
      const res = await t.call('POST', '/projects', { headers: inOrg(org), body: { data: { givenId: 'unaudited', name: 'Unaudited' } } });
      assert.equal(res.status, 500);
    } finally {
      await sql`drop trigger refuse_audit on audit_chain_heads; drop trigger refuse_audit_update on audit_chain_heads; drop function refuse_audit()`.execute(
        t.db,
      );
    }
    const { rows } = await sql`select id from projects where given_id = 'unaudited'`.execute(t.db);
    assert.deepEqual(rows, []);
  });

  it('has a row for every mutating route, as called by a VIEWER (DENIED) and by an OWNER (generated from the route table)', async () => {
    // Public routes take no bearer key (webhooks and OAuth legs prove themselves otherwise, the state
    // backend is tested with its own credentials): they are audited when their caller is a principal.
    const audited = routes.filter((r) => !r.public && auditSpecOf(r.method, r.url, r.audit));
    assert.ok(audited.length > 30, `${audited.length} audited routes`);
    for (const route of audited) {
      const url = route.url.replace(/:(\w+)/g, 'no-such-id');
      const action = auditSpecOf(route.method, route.url, route.audit)!.action;
      for (const [caller, token] of [
        ['VIEWER', viewer],
        ['OWNER', t.adminToken],
      ] as const) {
        const payload = route.method === 'GET' || route.method === 'DELETE' ? undefined : { data: {} };
        // Not every audited route answers JSON (the NDJSON export): only an error body is read.
        const raw = await t.app.inject({
          method: route.method as 'POST',
          url,
          headers: { authorization: `Bearer ${token}`, ...inOrg(org) },
          ...(payload ? { payload } : {}),
        });
        const res = { status: raw.statusCode, body: raw.statusCode >= 400 ? JSON.parse(raw.body) : undefined };
        const rows = await rowsOf(t, raw.headers['x-request-id'] as string);
        const what = `${caller} ${route.method} ${route.url} → ${res.status}`;
        assert.equal(rows.length, 1, what);
        assert.equal(rows[0].action, action, what);
        assert.equal(rows[0].organization_id, org, what);
        const outcome = res.status === 403 ? 'DENIED' : res.status < 400 ? 'SUCCESS' : 'FAILURE';
        assert.equal(rows[0].outcome, outcome, what);
        if (res.status >= 400) assert.equal(rows[0].error_code, res.body.code, what);
      }
    }
  });

  it('lets every audited request go once answered, so the request scope costs nothing between them', async () => {
    await t.call('POST', '/projects', { headers: inOrg(org), body: { data: { givenId: 'let-go', name: 'Let go' } } });
    await t.call('DELETE', '/projects/no-such-project', { token: viewer });
    assert.equal(auditedInFlight(), 0);
  });

  it('lists rows to ADMIN+ only, newest first, with cursor pages and filters, and exports NDJSON', async () => {
    assert.equal((await t.call('GET', '/audit-events', { token: viewer })).status, 403);
    const page = await t.call('GET', '/audit-events?limit=2&action=project.create', { headers: inOrg(org) });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    assert.equal(page.body.data.length, 2);
    assert.ok(page.body.data.every((e: any) => e.action === 'project.create'));
    assert.ok(page.body.data[0].seq > page.body.data[1].seq);
    const next = await t.call('GET', `/audit-events?limit=2&action=project.create&cursor=${page.body.meta.nextCursor}`, { headers: inOrg(org) });
    assert.ok(next.body.data.every((e: any) => e.seq < page.body.data[1].seq));
    const denied = await t.call('GET', '/audit-events?outcome=DENIED&limit=200', { headers: inOrg(org) });
    assert.ok(denied.body.data.length > 10);

    const res = await t.app.inject({
      method: 'GET',
      url: '/audit-events/export?outcome=SUCCESS',
      headers: { authorization: `Bearer ${t.adminToken}`, ...inOrg(org) },
    });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /application\/x-ndjson/);
    const lines: any[] = res.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.ok(lines.length >= 2 && lines.every((l) => l.outcome === 'SUCCESS' && l.organizationId === org));
    const [exportRow] = await rowsOf(t, String(res.headers['x-request-id']));
    assert.equal(exportRow.action, 'audit.export', 'reading the audit log in bulk is itself recorded');
  });

  it("chains concurrent writes of one organization, and a new organization's first, with non-ASCII text, into one unbroken chain", async () => {
    const fresh = await createOrganization(t, 'Fresh chain');
    const created = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.call('POST', '/projects', {
          headers: { ...inOrg(fresh), 'user-agent': `agent-é-${i}` },
          body: { data: { givenId: `chain-${i}`, name: `Ünïcode ☃ 💥 ${i}` } },
        }),
      ),
    );
    assert.deepEqual(
      created.map((r) => r.status),
      created.map(() => 201),
    );
    const { rows } = await sql<{ seq: string }>`select seq from audit_events where organization_id = ${fresh} order by seq`.execute(t.db);
    assert.deepEqual(
      rows.map((r) => Number(r.seq)),
      rows.map((_, i) => i + 1),
    );
    const verified = await t.call('GET', '/audit-events/verify', { headers: inOrg(fresh) });
    assert.equal(verified.body.data.valid, true, JSON.stringify(verified.body));
    assert.ok(verified.body.data.checked >= 12);
  });

  it('the hash chain holds, and shows an edited row', async () => {
    const ok = await t.call('GET', '/audit-events/verify', { headers: inOrg(org) });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.data.valid, true, JSON.stringify(ok.body));
    assert.ok(ok.body.data.checked > 10);

    await assert.rejects(sql`update audit_events set action = 'x' where organization_id = ${org}`.execute(t.db), /append-only/);
    // Whoever owns the database can still get past the trigger; the chain is what shows it.
    await t.db.connection().execute(async (c) => {
      await sql`set session_replication_role = replica`.execute(c);
      await sql`update audit_events set action = action || '.edited' where organization_id = ${org} and seq = 5`.execute(c);
      await sql`set session_replication_role = origin`.execute(c);
    });
    const broken = await t.call('GET', '/audit-events/verify', { headers: inOrg(org) });
    assert.deepEqual({ valid: broken.body.data.valid, at: broken.body.data.brokenAtSeq }, { valid: false, at: 5 });
  });
});
