import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { App } from '../src/platform/http/app.ts';
import { consoleBrowser, csrfOf } from './helpers/console.ts';
import { createStack, type EngineTestApp, startEngineTestApp } from './helpers/engine.ts';

/** What the sweep reads of a route's body schema (TypeBox's JSON Schema). */
interface FormSchema {
  properties?: Record<string, FormSchema>;
  anyOf?: FormSchema[];
  const?: unknown;
  pattern?: string;
  maxLength?: number;
}

/**
 * Every page, form and stream of the web console, asked with hostile path segments, query strings and
 * form fields, signed in and not: none may answer a 5xx or hang. The console's routes are hidden from
 * the API document, so the API's own sweeps do not reach them: they are recorded as they register.
 */
describe('the web console under hostile input', () => {
  // The run queue's schema is installed, as in every deployment (no worker runs: nothing needs to).
  let t: EngineTestApp;
  let baseUrl: string;
  let orgId: string;
  let cookie: string;
  let stackId: string;
  const routes: { method: string; url: string; body?: FormSchema }[] = [];
  const recordRoutes = Object.assign(
    async (app: App) => {
      app.addHook('onRoute', (route) => {
        if (!(route.schema as { hide?: boolean } | undefined)?.hide || route.url === '/openapi.json') return;
        for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
          if (method === 'GET' || method === 'POST') routes.push({ method, url: route.url, body: (route.schema as { body?: FormSchema }).body });
        }
      });
    },
    // Not encapsulated, so the hook sees the routes every later plugin registers.
    { [Symbol.for('skip-override')]: true },
  );
  const { signIn } = consoleBrowser(() => t.app);

  before(async () => {
    t = await startEngineTestApp({ routesBefore: [recordRoutes] });
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    orgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    cookie = (await signIn(t.adminToken)).cookie!;
    stackId = (await createStack(t, [{ id: 'build', command: 'true' }])).id;
  });
  after(async () => t?.close());

  /**
   * The status a request is answered with, read from the response's head over a real connection (a
   * live page's stream is then closed at once, as a browser leaving the page would).
   */
  const statusOf = (method: string, path: string, options: { cookie?: string; form?: string } = {}) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${baseUrl}${path}`,
        {
          method,
          headers: {
            ...(options.cookie ? { cookie: options.cookie } : {}),
            ...(options.form !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
          },
        },
        (res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
          req.destroy();
        },
      );
      req.on('error', reject);
      req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
      req.end(options.form);
    });

  const MISSING_ID = '0196a3c7e1f07a2b9c3d4e5f60718293';
  const HOSTILE_SEGMENTS = ['..', '.', '%2e%2e', '%00', '%ff', '%E2%80%AE', "'", 'a'.repeat(300), MISSING_ID];
  const HOSTILE_TEXT = ['<script>alert(1)</script>"\'', '\u0000\r\n\u202e', '['.repeat(300), '{"a":'.repeat(100), ' ', 'z'.repeat(20_000)];

  /**
   * A urlencoded form for a route's body schema: each field a value of its type, `text` (cut to the
   * field's length) where any text will do, else the first value a pattern or choice allows.
   */
  const formFor = (schema: FormSchema | undefined, text: string, csrf: string): string => {
    const form = new URLSearchParams();
    for (const [name, field] of Object.entries(schema?.properties ?? {})) {
      if (name === '_csrf') {
        if (csrf) form.set(name, csrf);
        continue;
      }
      form.set(name, valueFor(field, text));
    }
    return form.toString();
  };
  const valueFor = (field: FormSchema, text: string): string => {
    const choices = field.anyOf ?? [];
    if (field.const !== undefined) return String(field.const);
    if (choices.length) return valueFor(choices.find((c) => c.const === undefined) ?? choices[0]!, text);
    const fits = (v: string) => (!field.pattern || new RegExp(field.pattern).test(v)) && v.length <= (field.maxLength ?? Infinity);
    return [text.slice(0, field.maxLength ?? text.length), MISSING_ID, stackId, 'a', ''].find(fits) ?? '';
  };
  const HOSTILE_QUERIES = [
    'cursor=%ff',
    `cursor=${'x'.repeat(600)}`,
    'cursor=eyJpZCI6MX0',
    'q=%00',
    `q=${'('.repeat(100)}`,
    'after=-5',
    'after=99999999999999999999',
    'tail=abc',
    'chunk=1e99',
    'lines=L5-L1',
    'v=%0Adata:x',
    'status=nope',
    'status=',
    'environmentId=..',
    'stackId=%00',
    'createdById=me',
    `ref=${'a'.repeat(300)}`,
    'commitSha=zz',
    'from=x&to=y',
    'address=%00',
    'action=%00',
    'view=embed',
    'org=..',
    'returnTo=//evil.example',
    'back=javascript:alert(1)',
    'stackId=a&stackId=b',
  ];

  /** A route's URL with its parameters filled: the organization's id for :org, `value` for the rest. */
  const fill = (url: string, value: string) =>
    url.replace(/:(\w+)/g, (_, name: string) => (name === 'org' ? orgId : name === 'id' && value === 'STACK' ? stackId : value));

  it('records the console routes it sweeps', () => {
    assert.ok(routes.filter((r) => r.method === 'GET').length > 30, `${routes.length} routes recorded`);
    assert.ok(routes.some((r) => r.url === '/orgs/:org/stacks/:id/live'));
  });

  it('no page or stream answers a hostile path segment or query with a 5xx, signed in or not', async () => {
    const failures: string[] = [];
    const answered = new Map<number, number>();
    const check = async (path: string, as?: string) => {
      const status = await statusOf('GET', path, { cookie: as });
      answered.set(status, (answered.get(status) ?? 0) + 1);
      if (status >= 500) failures.push(`${status} GET ${path}${as ? '' : ' (signed out)'}`);
    };
    for (const route of routes.filter((r) => r.method === 'GET' && !r.url.includes('*'))) {
      for (const segment of route.url.includes(':') ? HOSTILE_SEGMENTS : []) {
        await check(fill(route.url, segment), cookie);
      }
      const base = fill(route.url, 'STACK');
      for (const query of HOSTILE_QUERIES) await check(`${base}?${query}`, cookie);
      await check(`${base}?${HOSTILE_QUERIES[0]}`);
    }
    assert.deepEqual(failures, []);
    // The sweep reached pages that rendered, validation that refused, lookups that found nothing, and the sign-in redirect.
    for (const status of [200, 303, 400, 404]) assert.ok(answered.get(status), `no ${status} among ${JSON.stringify([...answered])}`);
  });

  it('no form answers hostile fields with a 5xx, with the anti-forgery token or without', async () => {
    const csrf = csrfOf((await t.app.inject({ url: `/orgs/${orgId}/runs`, headers: { cookie } })).body);
    const failures: string[] = [];
    const posted = new Map<number, number>();
    for (const route of routes.filter((r) => r.method === 'POST' && !r.url.endsWith('/sign-out'))) {
      // Forms that pass the route's schema, each field hostile where its type lets it be, so that the
      // handler runs; then the same without the token, and junk that passes no schema.
      const forms = [...HOSTILE_TEXT.map((text) => formFor(route.body, text, csrf)), formFor(route.body, HOSTILE_TEXT[0]!, ''), '_csrf=%ff&a=%00'];
      for (const path of [fill(route.url, 'STACK'), fill(route.url, '..'), fill(route.url, MISSING_ID)]) {
        for (const form of forms) {
          const status = await statusOf('POST', path, { cookie, form });
          posted.set(status, (posted.get(status) ?? 0) + 1);
          if (status >= 500) failures.push(`${status} POST ${path} with ${form.slice(0, 120)}`);
        }
      }
    }
    assert.deepEqual(failures, []);
    // Handlers ran: forms went through (a redirect) or were refused by the API (the page again, with its status).
    for (const status of [303, 400, 403, 404, 409]) assert.ok(posted.get(status), `no ${status} among ${JSON.stringify([...posted])}`);
  });
});
