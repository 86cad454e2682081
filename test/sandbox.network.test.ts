import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import type { StepWorkspace } from '../src/engine/sandbox/sandbox.ts';
import { parseAllowList } from '../src/platform/outbound/address-policy.ts';
import { createOrganization, inOrg, userCaller } from './helpers/callers.ts';
import {
  createStack,
  logLines,
  pipelineConfig,
  spawnWorkerProcess,
  startEngineTestApp,
  stepsOf,
  triggerRun,
  waitFor,
  type EngineTestApp,
} from './helpers/engine.ts';
import { startCountingListener, startDnsServer, startPublicHost, type PublicHost } from './helpers/public-host.ts';
import { runInWorkspace } from './helpers/sandbox.ts';

/**
 * Step uids of these tests' own: the hostile-step suite, which may run beside them, counts the processes
 * of the default range as leftovers of its attacks.
 */
const OWN_UIDS = { PLINTH_SANDBOX_UID_BASE: '300000', PLINTH_SANDBOX_UID_COUNT: '10000' };

/** A request through the step's proxy: `-p` makes curl CONNECT, as HTTPS clients do; without, an absolute-URI request. */
const viaProxy = (url: string, tunnel = false) => `curl -sS -m 10 --http0.9 ${tunnel ? '-p ' : ''}--noproxy '' -x "$HTTP_PROXY" ${url}`;

/** The worker's spawner: this process's child running spawner-child.mjs. */
function spawnerPid(): number {
  const children = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  const pid = children.find((child) => readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('spawner-child.mjs'));
  assert.ok(pid, 'a spawner runs');
  return pid;
}

/** This host's first address that is not loopback: a service listening on all addresses is there too. */
function hostAddress(): string | undefined {
  return Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && !a.internal && a.family === 'IPv4')?.address;
}

/**
 * What a step can reach under the default network (`policy`), tried as an attacker would: real steps
 * of a MEMBER, run by a real `plinth worker` process through the API.
 */
describe("a step's network: only the egress policy leads out", () => {
  let t: EngineTestApp;
  let worker: ChildProcess;
  let member: string;
  let org: string;
  let publicHost: PublicHost;
  let loopback: Awaited<ReturnType<typeof startCountingListener>>;
  let onHostAddress: Awaited<ReturnType<typeof startCountingListener>>;
  let backend: http.Server;
  let backendHits = 0;
  const dbPort = new URL(process.env.PLINTH_TEST_DATABASE_URL!).port;

  async function runStep(command: string) {
    const stack = await createStack(t, [{ id: 'net', command, timeoutSeconds: 60 }], member);
    return runStackStep(stack.id);
  }

  async function runStackStep(stackId: string) {
    const run = await triggerRun(t, stackId, {}, member);
    const done = await waitFor(
      `run ${run.id} to end`,
      async () => {
        const r = (await t.call('GET', `/pipeline-runs/${run.id}`, { token: member })).body.data;
        return ['SUCCEEDED', 'FAILED'].includes(r.status) ? r : undefined;
      },
      70_000,
      100,
    );
    const [step] = await stepsOf(t, run.id, member);
    return { run: done, output: (await logLines(t, step.id, member)).join('\n') };
  }

  before(async () => {
    t = await startEngineTestApp();
    org = await createOrganization(t, 'Tenant');
    member = (await userCaller(t, 'mallory@net.test', 'MEMBER', org)).token;
    publicHost = await startPublicHost();
    loopback = await startCountingListener('127.0.0.1');
    onHostAddress = await startCountingListener('0.0.0.0');
    // The state backend's stand-in, on the host's loopback as a single-machine Plinth's API is.
    backend = http.createServer((_req, res) => {
      backendHits++;
      res.end('state backend\n');
    });
    backend.listen(0, '127.0.0.1');
    await once(backend, 'listening');
    const backendUrl = `http://127.0.0.1:${(backend.address() as { port: number }).port}`;
    worker = spawnWorkerProcess(t, { ...OWN_UIDS, PLINTH_SANDBOX: 'namespaces', PLINTH_STATE_BACKEND_URL: backendUrl });
  });
  after(async () => {
    worker.kill('SIGKILL');
    publicHost.close();
    loopback.close();
    onHostAddress.close();
    backend.close();
    await t.close();
  });

  it("cannot reach a service on the host's loopback, directly, as an HTTP request or through a CONNECT tunnel", async () => {
    const url = `http://127.0.0.1:${loopback.port}/`;
    const { output } = await runStep(
      [`curl -sS -m 5 --noproxy '*' ${url}; echo "direct=$?"`, `${viaProxy(url)}; echo "request=$?"`, `${viaProxy(url, true)}; echo "tunnel=$?"`].join('\n'),
    );
    assert.match(output, /direct=[1-9]/);
    assert.match(output, /connecting to 127\.0\.0\.1 is not allowed: loopback/);
    assert.match(output, /request=0/, "the refusal is the proxy's own 403 page");
    assert.match(output, /CONNECT tunnel failed, response 403/);
    assert.doesNotMatch(output, /secret/);
    assert.equal(loopback.connections(), 0);
  });

  it("cannot reach the platform's PostgreSQL, by address or by the name localhost", async () => {
    const { output } = await runStep(
      [`${viaProxy(`telnet://127.0.0.1:${dbPort}`, true)}; echo "address=$?"`, `${viaProxy(`telnet://localhost:${dbPort}`, true)}; echo "name=$?"`].join('\n'),
    );
    assert.match(output, /address=56/);
    assert.match(output, /name=56/);
    assert.equal(output.match(/CONNECT tunnel failed, response 403/g)?.length, 2, output);
  });

  it('cannot reach the host through its own non-loopback address', async (ctx) => {
    const address = hostAddress();
    if (!address) return ctx.skip('this host has no address but loopback');
    const { output } = await runStep(`${viaProxy(`http://${address}:${onHostAddress.port}/`)}; ${viaProxy(`http://${address}:${onHostAddress.port}/`, true)}`);
    assert.match(output, new RegExp(`connecting to ${address.replace(/\./g, '\\.')} is not allowed: an address of this host`));
    assert.equal(onHostAddress.connections(), 0);
  });

  it('cannot reach the cloud metadata service: refused by the proxy, and no route leads there', async () => {
    const { output } = await runStep(
      [
        `${viaProxy('http://169.254.169.254/latest/meta-data/')}; echo`,
        `curl -sS -m 5 --noproxy '*' http://169.254.169.254/latest/meta-data/; echo "direct=$?"`,
      ].join('\n'),
    );
    assert.match(output, /connecting to 169\.254\.169\.254 is not allowed: link-local \(cloud metadata\)/);
    assert.match(output, /direct=7/, 'no route: the connection fails at once, nothing is sent');
  });

  it('reaches a public host through its proxy, as HTTP clients and CONNECT tunnels do, and nothing directly', async () => {
    const url = `http://${publicHost.address}/`;
    const { run, output } = await runStep(
      [`curl -sS -m 10 ${url}`, viaProxy(url, true), `curl -sS -m 5 --noproxy '*' ${url} || echo "direct failed"`].join('\n'),
    );
    assert.equal(run.status, 'SUCCEEDED', output);
    assert.equal(output.match(/hello from the public internet/g)?.length, 2, output);
    assert.match(output, /direct failed/);
    assert.equal(publicHost.requests(), 2);
  });

  it('in an execution environment whose egressAllow is empty, reaches the state backend and nothing else', async () => {
    const ee = await t.call('POST', '/execution-environments', {
      headers: inOrg(org),
      body: { data: { givenId: 'sealed', name: 'Sealed', type: 'LOCAL', egressAllow: [] } },
    });
    assert.equal(ee.status, 201, JSON.stringify(ee.body));
    const project = await t.call('POST', '/projects', { token: member, body: { data: { givenId: 'sealed-project', name: 'Sealed' } } });
    const env = await t.call('POST', '/environments', {
      token: member,
      body: { data: { projectId: project.body.data.id, givenId: 'sealed', name: 'Sealed', executionEnvironmentId: ee.body.data.id } },
    });
    assert.equal(env.status, 201, JSON.stringify(env.body));
    const backendUrl = `http://127.0.0.1:${(backend.address() as { port: number }).port}/`;
    const command = `${viaProxy(`http://${publicHost.address}/`)}; curl -sS -m 10 ${backendUrl}`;
    const stack = await t.call('POST', '/stacks', {
      token: member,
      body: {
        data: {
          projectId: project.body.data.id,
          environmentId: env.body.data.id,
          name: 'Sealed',
          pipelines: { change: pipelineConfig([{ id: 'net', command, timeoutSeconds: 60 }]) },
        },
      },
    });
    assert.equal(stack.status, 201, JSON.stringify(stack.body));
    const { output } = await runStackStep(stack.body.data.id);
    assert.match(
      output,
      new RegExp(`connecting to ${publicHost.address.replace(/\./g, '\\.')} is not allowed: not in the execution environment's egress allowlist`),
      output,
    );
    assert.match(output, /state backend/);
  });

  it('reaches the state backend at its loopback URL, directly as OpenTofu does (Go never proxies loopback) and through the proxy', async () => {
    const before = backendHits;
    const url = `http://127.0.0.1:${(backend.address() as { port: number }).port}/`;
    const { run, output } = await runStep(`curl -sS -m 10 --noproxy '*' ${url} && curl -sS -m 10 ${url}`);
    assert.equal(run.status, 'SUCCEEDED', output);
    assert.equal(output.match(/state backend/g)?.length, 2, output);
    assert.equal(backendHits, before + 2);
  });
});

/** The same sandbox with names: its resolver, and the operator's allowlist by CIDR and by host name. */
describe("a step's names and the operator's allowlist", () => {
  let workRoot: string;
  let sandbox: NamespaceSandbox;
  let workspace: StepWorkspace;
  let publicHost: PublicHost;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let allowedByCidr: Awaited<ReturnType<typeof startCountingListener>>;
  let allowedByName: Awaited<ReturnType<typeof startCountingListener>>;
  let backendOnHostAddress: Awaited<ReturnType<typeof startCountingListener>>;

  before(async () => {
    workRoot = mkdtempSync(path.join(os.tmpdir(), 'plinth-net-'));
    publicHost = await startPublicHost();
    dns = await startDnsServer({ 'public.test': publicHost.address });
    allowedByCidr = await startCountingListener('127.0.0.2');
    allowedByName = await startCountingListener('127.0.0.1');
    backendOnHostAddress = await startCountingListener('0.0.0.0');
    const settings = loadSandboxSettings({ ...OWN_UIDS, PLINTH_SANDBOX: 'namespaces', PLINTH_SANDBOX_POOL: '0' }, workRoot);
    const names: Record<string, string> = { 'public.test': publicHost.address, 'git.internal': '127.0.0.1', 'slow.test': '127.0.0.2' };
    settings.egress = {
      ...settings.egress,
      allow: parseAllowList(['127.0.0.2/32', 'git.internal'], 'test'),
      // The host's resolver, as the worker sees it: the test's, so no query leaves the machine.
      lookup: async (host) => {
        // A name whose resolution takes longer than its step waits (a tenant's own slow DNS server).
        if (host === 'slow.test') await new Promise((resolve) => setTimeout(resolve, 700));
        return names[host] ? [{ address: names[host]!, family: 4 }] : [];
      },
      dnsServers: [dns.server],
      // The state backend at one of this host's own addresses, as a worker on the API's machine may see it.
      endpoints: hostAddress() ? [{ host: hostAddress()!, port: backendOnHostAddress.port }] : [],
    };
    sandbox = new NamespaceSandbox(settings);
    assert.equal((await sandbox.start()).mode, 'namespaces');
  });
  after(async () => {
    await sandbox.close();
    for (const closing of [publicHost, dns, allowedByCidr, allowedByName, backendOnHostAddress]) closing.close();
    rmSync(workRoot, { recursive: true, force: true });
  });

  it("keeps a claim's network for its next step, and makes it again once the spawner that held it is gone", async () => {
    const netOfStep = async () => {
      workspace = await sandbox.open();
      const { code, output } = await runInWorkspace(workspace, `readlink /proc/self/ns/net; ${viaProxy(`http://${publicHost.address}/`, true)}`);
      await workspace.dispose();
      assert.equal(code, 0, output);
      assert.match(output, /hello from the public internet/, 'the proxy answers');
      return output.split('\n')[0];
    };
    const first = await netOfStep();
    assert.equal(await netOfStep(), first, 'the next step of the claim runs in the same namespace');
    const killed = spawnerPid();
    process.kill(killed, 'SIGKILL');
    // Its namespace went with it (nobody can enter it): a new spawner made the one that answered.
    await netOfStep();
    assert.notEqual(spawnerPid(), killed);
  });

  it("resolves names through a resolver on its own loopback that relays to the host's", async () => {
    workspace = await sandbox.open();
    const { code, output } = await runInWorkspace(workspace, 'cat /etc/resolv.conf; getent hosts public.test');
    await workspace.dispose();
    assert.equal(code, 0, output);
    assert.match(output, /^nameserver 127\.0\.0\.1$/m);
    assert.match(output, new RegExp(`^${publicHost.address.replace(/\./g, '\\.')}\\s+public\\.test$`, 'm'));
    assert.ok(dns.queries().includes('public.test'));
  });

  it('reaches a public host by its name through the proxy', async () => {
    workspace = await sandbox.open();
    const { code, output } = await runInWorkspace(workspace, 'curl -sS -m 10 http://public.test/');
    await workspace.dispose();
    assert.equal(code, 0, output);
    assert.match(output, /hello from the public internet/);
  });

  it('reaches what the operator allows, a network by CIDR and a host by name, and nothing beside them', async () => {
    workspace = await sandbox.open();
    const command = [
      `${viaProxy(`http://127.0.0.2:${allowedByCidr.port}/`, true)}`,
      `${viaProxy(`http://git.internal:${allowedByName.port}/`, true)}`,
      `${viaProxy(`http://127.0.0.1:${allowedByName.port}/`, true)}; echo "by address=$?"`,
    ].join('\n');
    const { output } = await runInWorkspace(workspace, command);
    await workspace.dispose();
    assert.equal(output.match(/^secret$/gm)?.length, 2, output);
    assert.match(output, /by address=56/, 'the name is allowed, not the address it resolves to');
    assert.equal(allowedByCidr.connections(), 1);
    assert.equal(allowedByName.connections(), 1);
  });

  it("reaches the state backend at this host's own address, which the policy refuses to anything else", async (ctx) => {
    const address = hostAddress();
    if (!address) return ctx.skip('this host has no address but loopback');
    workspace = await sandbox.open();
    const { output } = await runInWorkspace(
      workspace,
      `${viaProxy(`http://${address}:${backendOnHostAddress.port}/`, true)}; ${viaProxy(`http://${address}:${allowedByCidr.port}/`, true)}; echo "other=$?"`,
    );
    await workspace.dispose();
    assert.match(output, /^secret$/m, output);
    assert.match(output, /other=56/, 'another port of the same address stays refused');
    assert.equal(backendOnHostAddress.connections(), 1);
  });

  it("reaches only what its execution environment's list also allows, and the state backend always", async () => {
    workspace = await sandbox.open({ egressNarrowing: parseAllowList(['127.0.0.2/32'], 'egressAllow') });
    const backend = hostAddress() ? `${viaProxy(`http://${hostAddress()}:${backendOnHostAddress.port}/`, true)}; echo "backend=$?"` : 'echo backend=0';
    const asked = dns.queries().length;
    const { output } = await runInWorkspace(
      workspace,
      [
        'getent hosts public.test || echo "no name"',
        `${viaProxy(`http://127.0.0.2:${allowedByCidr.port}/`, true)}; echo "listed=$?"`,
        `${viaProxy(`http://${publicHost.address}/`, true)}; echo "public=$?"`,
        `${viaProxy('http://public.test/')} ; echo "by name=$?"`,
        backend,
      ].join('\n'),
    );
    await workspace.dispose();
    assert.match(output, /listed=0/, output);
    assert.match(output, /public=56/, 'the public internet is narrowed away');
    assert.match(output, /not in the execution environment's egress allowlist/);
    assert.match(output, /backend=0/, 'the state backend stays reachable');
    assert.match(output, /^no name$/m, 'a name the list does not name does not resolve');
    assert.deepEqual(dns.queries().slice(asked), [], 'nor does its query leave the host');
    const next = await sandbox.open();
    const after = await runInWorkspace(next, `${viaProxy(`http://${publicHost.address}/`, true)}; echo "public=$?"`);
    await next.dispose();
    assert.match(after.output, /public=0/, 'the next step of the claim, narrowed by nothing, reaches it');
  });

  it('connects nothing for a step connection that closed while its name was resolving', async () => {
    workspace = await sandbox.open();
    const before = allowedByCidr.connections();
    const url = `http://slow.test:${allowedByCidr.port}/`;
    const { output } = await runInWorkspace(
      workspace,
      `for i in 1 2 3 4 5 6 7 8; do curl -sS -m 0.2 -p --noproxy '' -x "$HTTP_PROXY" ${url} 2>/dev/null & done; wait; sleep 2; echo gave up`,
    );
    await workspace.dispose();
    assert.match(output, /gave up/);
    assert.equal(allowedByCidr.connections(), before, 'no connection was opened for a step side that was gone');
  });

  it("relays only standard queries: an UPDATE from the step never reaches the host's resolver", async () => {
    workspace = await sandbox.open();
    const asked = dns.queries().length;
    // A DNS UPDATE (opcode 5) for public.test, then an ordinary query: only the query goes out.
    const script = `const d=require('dgram').createSocket('udp4');const name=Buffer.from([6,...Buffer.from('public'),4,...Buffer.from('test'),0]);const msg=(flags)=>Buffer.concat([Buffer.from([0,1,flags>>8,flags&255,0,1,0,0,0,0,0,0]),name,Buffer.from([0,1,0,1])]);d.send(msg(0x2800),53,'127.0.0.1',()=>d.send(msg(0x0100),53,'127.0.0.1'));d.on('message',(m)=>{console.log('answered',m.readUInt16BE(0));d.close()});setTimeout(()=>process.exit(0),3000).unref();`;
    const { output } = await runInWorkspace(workspace, `node -e "${script}"`);
    await workspace.dispose();
    assert.match(output, /answered 1/, 'the query was answered under its own id');
    assert.deepEqual(dns.queries().slice(asked), ['public.test'], 'one question reached the resolver: the query, not the update');
  });
});
