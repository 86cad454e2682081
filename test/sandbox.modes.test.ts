import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { loadEngineConfig } from '../src/engine/engine-config.ts';
import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import { EngineWorker } from '../src/engine/worker.ts';
import { createStack, FAST_ENGINE_ENV, getRun, logLines, startEngineTestApp, stepsOf, triggerRun, waitFor, type EngineTestApp } from './helpers/engine.ts';
import { TEST_SECRETS } from './helpers/app.ts';
import { ROOTLESS } from './helpers/sandbox.ts';

const cannotIsolate = async () => 'this host cannot isolate (a test says so)';

/** Which isolation is active, how it is reported, and what happens where there is none. */
describe('sandbox modes', () => {
  let t: EngineTestApp;
  before(async () => (t = await startEngineTestApp()));
  after(() => t.close());

  async function runOne(command: string) {
    const stack = await createStack(t, [{ id: 'only', command }]);
    const run = await triggerRun(t, stack.id);
    const done = await waitFor(
      `run ${run.id} to end`,
      async () => {
        const r = await getRun(t, run.id);
        return ['SUCCEEDED', 'FAILED'].includes(r.status) ? r : undefined;
      },
      20_000,
    );
    const [step] = await stepsOf(t, run.id);
    return { run: done, step, output: (await logLines(t, step.id)).join('\n') };
  }

  it('with no isolation on the host and no opt-out, a script step fails with Engine:Sandbox:UNAVAILABLE naming the opt-out', async () => {
    const worker = await t.startWorker({ sandbox: new NamespaceSandbox(loadSandboxSettings({}, undefined), cannotIsolate) });
    const health = await t.call('GET', '/health', { token: null });
    assert.equal(health.status, 200, 'the API still serves');
    assert.equal(health.body.status, 'degraded');
    assert.match(health.body.problems[0], /script steps fail: this worker cannot isolate them \(this host cannot isolate/);
    assert.equal(health.body.isolation.mode, 'unavailable');
    assert.match(health.body.isolation.detail, /cannot isolate/);
    const { run, step } = await runOne('echo should never run');
    assert.equal(run.status, 'FAILED');
    assert.equal(step.error.code, 'Engine:Sandbox:UNAVAILABLE');
    assert.match(step.error.message, /PLINTH_SANDBOX=off/);
    assert.match(
      run.error.message,
      /^Step "only" failed: Script steps need isolation and this host has none .*PLINTH_SANDBOX=off/,
      'the run itself says why and what to do',
    );
    await worker.stop();
    t.workers.splice(t.workers.indexOf(worker), 1);
  });

  it('PLINTH_SANDBOX=namespaces on a host that cannot isolate refuses to start the worker', async () => {
    const config = {
      ...loadEngineConfig(FAST_ENGINE_ENV),
      sandbox: new NamespaceSandbox(loadSandboxSettings({ PLINTH_SANDBOX: 'namespaces' }, undefined), cannotIsolate),
    };
    const worker = new EngineWorker(t.db, t.database.url, config, pino({ level: 'silent' }), TEST_SECRETS, 'refused-worker');
    await assert.rejects(worker.start(), /PLINTH_SANDBOX=namespaces, but this host cannot isolate steps/);
  });

  it('PLINTH_SANDBOX=off is the explicit single-tenant opt-out: steps run unisolated, and /health says so', async () => {
    const worker = await t.startWorker(loadEngineConfig({ ...FAST_ENGINE_ENV, PLINTH_SANDBOX: 'off' }));
    const health = await t.call('GET', '/health', { token: null });
    assert.equal(health.body.isolation.mode, 'off');
    assert.deepEqual(health.body.isolation.limits, { maxProcesses: null, memoryMb: null, cpus: null });
    const { run, output } = await runOne('id -u; test -d /proc/1 && echo "host proc visible"');
    assert.equal(run.status, 'SUCCEEDED');
    assert.match(output, new RegExp(`^${process.getuid!()}$`, 'm'), "the worker's own uid");
    await worker.stop();
    t.workers.splice(t.workers.indexOf(worker), 1);
  });

  it('by default steps are isolated by namespaces, and /health reports the mechanism, the network and the enforced limits', async () => {
    const worker = await t.startWorker();
    const { isolation } = (await t.call('GET', '/health', { token: null })).body;
    assert.equal(isolation.mode, 'namespaces');
    assert.equal(isolation.requested, 'auto');
    assert.equal(isolation.privileges, ROOTLESS ? 'rootless' : 'root');
    assert.equal(isolation.network, 'policy');
    assert.ok(['v1', 'v2', 'none'].includes(isolation.cgroup));
    assert.equal(isolation.limits.maxProcesses, 512);
    if (isolation.cgroup !== 'none') assert.deepEqual(isolation.limits, { maxProcesses: 512, memoryMb: 2048, cpus: 1 });
    const { run, output } = await runOne('cat /sys/fs/cgroup/pids/pids.max 2>/dev/null; echo "uid $(id -u)"; echo "home $HOME"; echo "path $PATH"');
    assert.equal(run.status, 'SUCCEEDED');
    assert.match(output, /^uid 2\d{5}$/m);
    assert.match(output, /^home \/workspace$/m);
    assert.match(output, /^path \/usr\/local\/sbin:\/usr\/local\/bin:\/usr\/sbin:\/usr\/bin:\/sbin:\/bin$/m);
    await worker.stop();
    t.workers.splice(t.workers.indexOf(worker), 1);
  });

  it('PLINTH_SANDBOX_NETWORK=none gives a step no network but its own loopback', async () => {
    const worker = await t.startWorker(loadEngineConfig({ ...FAST_ENGINE_ENV, PLINTH_SANDBOX_NETWORK: 'none' }));
    const { run, output } = await runOne('tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "');
    assert.equal(run.status, 'SUCCEEDED');
    assert.deepEqual(output.split('\n'), ['lo']);
    await worker.stop();
    t.workers.splice(t.workers.indexOf(worker), 1);
  });

  it("a step's memory is limited where cgroups enforce it: going past PLINTH_STEP_MEMORY_MB kills the step", async () => {
    const worker = await t.startWorker(loadEngineConfig({ ...FAST_ENGINE_ENV, PLINTH_STEP_MEMORY_MB: '64' }));
    const { isolation } = (await t.call('GET', '/health', { token: null })).body;
    if (isolation.limits.memoryMb === null) return;
    // A shell variable of 128 MiB: the kernel's OOM killer ends the process holding it.
    const { output } = await runOne('v=$(head -c 134217728 /dev/zero | tr "\\0" x); echo "held ${#v}"');
    assert.doesNotMatch(output, /held 134217728/, `the step could use more than its 64 MiB:\n${output}`);
    await worker.stop();
    t.workers.splice(t.workers.indexOf(worker), 1);
  });
});
