import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { metrics } from '../src/platform/metrics/metrics.ts';
import { resolveStateStack } from '../src/opentofu/state.service.ts';
import { createOrganization, serviceAccountCaller, userCaller } from './helpers/callers.ts';
import { TEST_SECRETS } from './helpers/app.ts';
import { createTofuStack, stackCode, STANDIN, startTofuTestApp, type TofuTestApp } from './helpers/opentofu.ts';

/** One request as OpenTofu's http client makes it: HTTP Basic with the token as password. */
async function backend(t: TofuTestApp, method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.baseUrl}${path}`, {
    method,
    headers: {
      Authorization: `Basic ${Buffer.from(`me:${token}`).toString('base64')}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

const lockInfo = (id = randomUUID()) => ({
  ID: id,
  Operation: 'OperationTypeApply',
  Info: '',
  Who: 'someone@laptop',
  Version: '1.8.0',
  Created: new Date().toISOString(),
  Path: '',
});
const stateOf = (serial: number, lineage: string, extra: Record<string, unknown> = {}) => ({
  version: 4,
  terraform_version: '1.8.0',
  serial,
  lineage,
  outputs: {},
  resources: [],
  ...extra,
});

/** Runs the stand-in CLI on this machine, as a person would run tofu against a stack's state. */
function runStandin(dir: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [STANDIN, ...args], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env } });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('the OpenTofu http state backend', () => {
  let t: TofuTestApp;
  let member: string;
  let workspace: string;
  let stackId: string;

  before(async () => {
    t = await startTofuTestApp();
    member = (await serviceAccountCaller(t, 'MEMBER')).token;
    const stack = await createTofuStack(t);
    stackId = stack.id;
    workspace = `/state-backend/${stack.serviceStateBackendWorkspace}`;
  });
  after(() => t.close());

  it('GET with no state yet is 204, and no credential is 401', async () => {
    assert.equal((await backend(t, 'GET', workspace, member)).status, 204);
    const none = await fetch(`${t.baseUrl}${workspace}`);
    assert.equal(none.status, 401);
    assert.equal((await none.json()).code, 'Auth:Credential:MISSING');
  });

  it("LOCK is 200 (again with the same ID too); another holder gets 423 with the holder's lock info; UNLOCK is 200 and idempotent", async () => {
    const mine = lockInfo();
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, mine)).status, 200);
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, mine)).status, 200);
    const other = await backend(t, 'LOCK', `${workspace}/lock`, member, lockInfo());
    assert.equal(other.status, 423);
    assert.equal(other.json.ID, mine.ID);
    assert.equal(other.json.Who, 'someone@laptop');
    assert.equal(other.json.code, 'OpenTofu:StateLock:LOCKED');
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, member, lockInfo())).status, 423, 'only the holder unlocks');
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, member, mine)).status, 200);
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, member, mine)).status, 200);
  });

  it('two writers racing for the lock: exactly one holds it, the other is told who does', async () => {
    const a = lockInfo();
    const b = lockInfo();
    const answers = await Promise.all([a, b].map((info) => backend(t, 'LOCK', `${workspace}/lock`, member, info)));
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 423]);
    const winner = answers[0].status === 200 ? a : b;
    assert.equal(answers.find((r) => r.status === 423)!.json.ID, winner.ID);
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, member, winner)).status, 200);
  });

  it('a write must hold the lock it names; stale serials and other lineages are refused; a retried write is idempotent', async () => {
    const held = lockInfo();
    const lineage = randomUUID();
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, stateOf(1, lineage))).json.code, 'OpenTofu:StateLock:NOT_HELD');
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, held)).status, 200);
    assert.equal((await backend(t, 'POST', workspace, member, stateOf(1, lineage))).status, 423, 'no lock named while another holds it');
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${randomUUID()}`, member, stateOf(1, lineage))).status, 423);
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, stateOf(1, lineage))).status, 200);
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, stateOf(1, lineage))).status, 200, 'the same bytes again');
    const stale = await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, stateOf(1, lineage, { outputs: { x: { value: 1, type: 'number' } } }));
    assert.equal(stale.status, 409);
    assert.equal(stale.json.code, 'OpenTofu:State:STALE_SERIAL');
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, stateOf(0, lineage))).json.code, 'OpenTofu:State:STALE_SERIAL');
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, stateOf(2, randomUUID()))).json.code, 'OpenTofu:State:LINEAGE_MISMATCH');
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, '{"serial": "x"}')).status, 400);
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, stateOf(2, 'a\u0000b'))).status, 400);
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, { ID: 'x\ud800' })).status, 400);
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, 'not json')).status, 400);
    assert.equal((await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, stateOf(2, lineage))).status, 200);
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, member, held)).status, 200);

    const current = await backend(t, 'GET', workspace, member);
    assert.equal(current.status, 200);
    assert.equal(current.json.serial, 2);
    assert.ok(current.headers.get('content-md5'));
    const versions = (await t.call('GET', `/stacks/${stackId}/state-versions`)).body.data;
    assert.deepEqual(
      versions.map((v: any) => [v.serial, v.lineage]),
      [
        [1, lineage],
        [2, lineage],
      ],
    );
    assert.ok(versions.every((v: any) => !v.runId && v.principalId.length > 0));
    const rows = await t.db.selectFrom('stack_state_versions').select(['id', 'sealed_state']).execute();
    assert.ok(
      rows.every((r) => !r.sealed_state.includes(lineage)),
      'sealed at rest',
    );
    assert.equal(JSON.parse(TEST_SECRETS.open(rows[0].sealed_state, `stack_state_versions.state:${rows[0].id}`)).lineage, lineage);
  });

  it("reading state is state:read: a VIEWER gets 403 from the backend and from a version's content; another organization sees no workspace", async () => {
    const viewer = (await serviceAccountCaller(t, 'VIEWER')).token;
    const refused = await backend(t, 'GET', workspace, viewer);
    assert.equal(refused.status, 403, 'a 403, which OpenTofu reports, never a 404 it would read as "no state"');
    assert.equal(refused.json.code, 'Auth:Permission:DENIED', refused.text);
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, viewer, lockInfo())).status, 403);
    assert.equal((await backend(t, 'POST', workspace, viewer, stateOf(9, 'x'))).status, 403);
    const versions = (await t.call('GET', `/stacks/${stackId}/state-versions`, { token: viewer })).body.data;
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-versions/${versions[0].id}`, { token: viewer })).status, 403);
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-versions/${versions[0].id}`, { token: member })).body.data.state.serial, 1);
    const org = await createOrganization(t, 'Elsewhere');
    const stranger = (await serviceAccountCaller(t, 'OWNER', org)).token;
    assert.equal((await backend(t, 'GET', workspace, stranger)).status, 404);
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, stranger, lockInfo())).status, 404);
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-versions`, { token: stranger })).status, 404);
  });

  it("a key acting in another organization through X-Organization-Id reaches that organization's state, as on every route", async () => {
    const elsewhere = await createOrganization(t, 'Home of the key');
    const person = await userCaller(t, `both-${randomUUID()}@example.com`, 'MEMBER', elsewhere);
    assert.equal((await t.call('POST', '/memberships', { body: { data: { email: person.email, role: 'MEMBER' } } })).status, 201);
    const defaultOrg = (await t.call('GET', `/stacks/${stackId}`)).body.data.organizationId;
    const inDefault = { 'X-Organization-Id': defaultOrg };
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-versions`, { token: person.token, headers: inDefault })).status, 200);
    const state = await backend(t, 'GET', workspace, person.token, undefined, inDefault);
    assert.equal(state.status, 200, state.text);
    assert.equal(state.json.serial, 2);
    assert.equal((await backend(t, 'GET', workspace, person.token)).status, 404, "in the key's own organization the stack does not exist");
    assert.equal((await backend(t, 'GET', workspace, person.token, undefined, { 'X-Organization-Id': 'not an id!' })).status, 400);
  });

  it("UNLOCK: another ID is 423 whatever the caller; the holder's ID releases only for the holder, or with state:force-unlock", async () => {
    const held = lockInfo();
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, held)).status, 200);
    // `tofu force-unlock <id>` (OpenTofu 1.10 and later) sends the ID with every other field empty.
    const forceBody = { ID: held.ID, Operation: '', Info: '', Who: '', Version: '', Created: '0001-01-01T00:00:00Z', Path: '' };
    const otherMember = (await serviceAccountCaller(t, 'MEMBER')).token;
    const refused = await backend(t, 'UNLOCK', `${workspace}/lock`, otherMember, forceBody);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.json.code, 'OpenTofu:StateLock:NOT_HOLDER');
    const admin = await userCaller(t, `unlocker-${randomUUID()}@example.com`, 'ADMIN');
    assert.equal(
      (await backend(t, 'UNLOCK', `${workspace}/lock`, admin.token, { ...forceBody, ID: randomUUID() })).status,
      423,
      'a wrong ID is 423 even for an ADMIN',
    );
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, admin.token, {})).status, 400);
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-lock`)).body.data.lock.id, held.ID, 'still held');
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, admin.token, forceBody)).status, 200, 'an ADMIN may force it');
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-lock`)).body.data.locked, false);

    const again = lockInfo();
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, again)).status, 200);
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, member, { ID: again.ID })).status, 200, 'the holder releases with its ID alone');
  });

  it('a run credential reaching for another stack is a 403, decided without looking that stack up', async () => {
    const caller = { kind: 'run' as const, organizationId: 'any', stackId: 'its-own-stack', runId: 'r', principalId: 'run:r' };
    await assert.rejects(
      resolveStateStack(t.db, caller, `stack-${stackId}`),
      (error: { status: number; code: string }) => error.status === 403 && error.code === 'OpenTofu:State:OTHER_STACK',
    );
    assert.deepEqual(await resolveStateStack(t.db, caller, 'stack-its-own-stack'), { id: 'its-own-stack', organizationId: 'any' });
  });

  it('a state whose Content-MD5 does not match its body is refused', async () => {
    const held = lockInfo();
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, held)).status, 200);
    const body = JSON.stringify(stateOf(50, randomUUID()));
    const wrong = await backend(t, 'POST', `${workspace}?ID=${held.ID}`, member, body, {
      'Content-MD5': createHash('md5').update('something else').digest('base64'),
    });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.json.code, 'OpenTofu:State:CHECKSUM_MISMATCH');
    assert.equal((await backend(t, 'GET', workspace, member)).json.serial, 2, 'nothing was kept');
    assert.equal((await backend(t, 'UNLOCK', `${workspace}/lock`, member, held)).status, 200);
  });

  // The answer comes while most of the body is still unsent: the server cannot have waited for it. The
  // bounds are loose for a loaded machine (the old way took seconds per MiB); this runs in ~10 ms alone.
  it('a caller who may not write is refused before the body is read: a 32 MiB body from a VIEWER at once, /health answering meanwhile', async () => {
    const viewer = (await serviceAccountCaller(t, 'VIEWER')).token;
    const url = new URL(`${t.baseUrl}${workspace}`);
    const declared = 32 * 1024 * 1024;
    const firstPart = Buffer.alloc(256 * 1024, 0x61);
    const healthLatencies: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const at = performance.now();
        await fetch(`${t.baseUrl}/health`).then((r) => r.arrayBuffer());
        healthLatencies.push(performance.now() - at);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const refusals: { status: number; ms: number }[] = [];
    for (const [method, path] of [
      ['POST', url.pathname],
      ['LOCK', `${url.pathname}/lock`],
      ['UNLOCK', `${url.pathname}/lock`],
    ] as const) {
      refusals.push(
        await new Promise((resolve, reject) => {
          const at = performance.now();
          const req = httpRequest({
            host: url.hostname,
            port: url.port,
            method,
            path,
            headers: { Authorization: `Bearer ${viewer}`, 'Content-Type': 'application/json', 'Content-Length': declared },
          });
          req.on('response', (res) => {
            resolve({ status: res.statusCode ?? 0, ms: performance.now() - at });
            res.resume();
            req.destroy();
          });
          req.on('error', reject);
          req.write(firstPart);
        }),
      );
    }
    probing = false;
    await probe;
    for (const r of refusals) {
      assert.equal(r.status, 403);
      assert.ok(r.ms < 2000, `refused in ${r.ms.toFixed(1)} ms`);
    }
    assert.ok(healthLatencies.length > 0 && Math.max(...healthLatencies) < 2000, `/health took up to ${Math.max(...healthLatencies).toFixed(1)} ms`);
    // A writer's lock info past its cap is refused by its size, before it is read.
    const big = await backend(t, 'LOCK', `${workspace}/lock`, member, { ...lockInfo(), Info: 'x'.repeat(128 * 1024) });
    assert.equal(big.status, 413);
  });

  it('force-unlock is for ADMIN and above, and releases whoever holds the lock', async () => {
    const held = lockInfo();
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, held)).status, 200);
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-lock`)).body.data.lock.id, held.ID);
    assert.equal((await t.call('DELETE', `/stacks/${stackId}/state-lock`, { token: member })).status, 403);
    const admin = await userCaller(t, 'admin-unlock@example.com', 'ADMIN');
    assert.equal((await t.call('DELETE', `/stacks/${stackId}/state-lock`, { token: admin.token })).status, 204);
    assert.equal((await t.call('GET', `/stacks/${stackId}/state-lock`)).body.data.locked, false);
    assert.equal((await backend(t, 'LOCK', `${workspace}/lock`, member, lockInfo())).status, 200);
    await t.call('DELETE', `/stacks/${stackId}/state-lock`);
  });

  it("OpenTofu on a person's machine uses a stack's state with an API key: plan, apply, output; a held lock stops it", async () => {
    const stack = await createTofuStack(t);
    const code = stackCode({ resources: { 'standin_bucket.logs': { attributes: { name: 'logs' } } }, outputs: { bucket: { value: 'logs' } } });
    const address = `${t.baseUrl}/state-backend/${stack.serviceStateBackendWorkspace}`;
    const env = {
      TF_HTTP_ADDRESS: address,
      TF_HTTP_LOCK_ADDRESS: `${address}/lock`,
      TF_HTTP_UNLOCK_ADDRESS: `${address}/lock`,
      TF_HTTP_USERNAME: 'laptop',
      TF_HTTP_PASSWORD: member,
    };
    const { writeFileSync } = await import('node:fs');
    writeFileSync(`${code.dir}/backend.tf`, 'terraform {\n  backend "http" {}\n}\n');
    assert.equal((await runStandin(code.dir, ['init'], env)).code, 0);
    const plan = await runStandin(code.dir, ['plan', '-out=plan.bin'], env);
    assert.match(plan.output, /Plan: 1 to add/);
    const apply = await runStandin(code.dir, ['apply', 'plan.bin'], env);
    assert.equal(apply.code, 0, apply.output);
    const output = await runStandin(code.dir, ['output', '-json'], env);
    assert.deepEqual(JSON.parse(output.output), { bucket: { sensitive: false, type: 'string', value: 'logs' } });
    const versions = (await t.call('GET', `/stacks/${stack.id}/state-versions`)).body.data;
    assert.equal(versions.length, 1);
    assert.equal(versions[0].runId, undefined);

    const holder = lockInfo();
    await backend(t, 'LOCK', `/state-backend/${stack.serviceStateBackendWorkspace}/lock`, member, holder);
    const blocked = await runStandin(code.dir, ['plan', '-out=plan.bin'], env);
    assert.notEqual(blocked.code, 0);
    assert.match(blocked.output, new RegExp(`already locked: ID=${holder.ID}`));
    assert.equal((await runStandin(code.dir, ['apply', 'plan.bin'], env)).code, 1, 'the saved plan is stale as well as the state locked');
    await backend(t, 'UNLOCK', `/state-backend/${stack.serviceStateBackendWorkspace}/lock`, member, holder);
    const stale = await runStandin(code.dir, ['apply', 'plan.bin'], env);
    assert.match(stale.output, /Saved plan is stale/);

    // Reading state is a sensitive read: the audit log names it, and keeps no copy of the state itself.
    const { rows } = await sql<{
      action: string;
      outcome: string;
      diff: unknown;
    }>`select action, outcome, diff from audit_events where action in ('state.download', 'state.upload') and outcome = 'SUCCESS'`.execute(t.db);
    assert.ok(
      rows.some((r) => r.action === 'state.download'),
      'state downloads are audited',
    );
    assert.ok(
      rows.some((r) => r.action === 'state.upload'),
      'state uploads are audited',
    );
    assert.ok(
      rows.every((r) => !JSON.stringify(r.diff ?? null).includes('standin_bucket')),
      'no state body in the audit log',
    );
    // And the state backend's counter saw each kind of operation, by result (this process's registry).
    const counted = (await metrics.stateOps.get()).values;
    const count = (op: string, result: string) => counted.find((v) => v.labels.op === op && v.labels.result === result)?.value ?? 0;
    for (const [op, result] of [
      ['read', 'ok'],
      ['write', 'ok'],
      ['lock', 'ok'],
      ['unlock', 'ok'],
      ['lock', 'locked'],
    ])
      assert.ok(count(op, result) > 0, `plinth_state_ops_total{op="${op}",result="${result}"}`);
  });
});
