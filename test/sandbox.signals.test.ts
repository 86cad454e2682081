import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import { stopInStages, type StopGrace } from '../src/engine/sandbox/stop.ts';
import type { StepWorkspace } from '../src/engine/sandbox/sandbox.ts';
import { createSandbox } from '../src/engine/sandbox/index.ts';
import { createStack, FAST_ENGINE_ENV, logLines, startEngineTestApp, stepsOf, triggerRun, waitFor, waitForStep, type EngineTestApp } from './helpers/engine.ts';
import { ROOTLESS, STEP_TEST_PATH } from './helpers/sandbox.ts';

/** A step's child that reports every signal it gets and ends on SIGTERM, as OpenTofu ends on its interrupt. */
const COUNTING_CHILD = `sh -c 'trap "echo child got INT" INT; trap "echo child got TERM; exit 0" TERM; echo ready; while :; do sleep 0.05; done'`;

/** Starts `command` in a workspace, stops it in stages once it printed `ready`; resolves with its output, exit and how long the stop took. */
async function stopOnceReady(workspace: StepWorkspace, command: string, grace: StopGrace) {
  const proc = await workspace.spawn({ command, env: { PATH: STEP_TEST_PATH } });
  let output = '';
  let stoppedAt = 0;
  let cancel: (() => void) | undefined;
  const collect = (d: Buffer) => {
    output += d.toString();
    if (!cancel && output.includes('ready')) {
      stoppedAt = performance.now();
      cancel = stopInStages(proc, grace);
    }
  };
  proc.child.stdout!.on('data', collect);
  proc.child.stderr!.on('data', collect);
  const [code, signal] = await once(proc.child, 'close');
  cancel?.();
  return { output, code: code as number | null, signal: signal as string | null, stopMs: performance.now() - stoppedAt };
}

/**
 * A stopped step's processes get one SIGINT, then one SIGTERM after the grace, then SIGKILL: as
 * OpenTofu expects (a second interrupt makes it abandon the resource in flight), with the sandbox on.
 */
describe('stopping a sandboxed step: SIGINT once, SIGTERM after the grace, then SIGKILL', () => {
  let workRoot: string;
  let sandbox: NamespaceSandbox;
  before(async () => {
    workRoot = mkdtempSync(path.join(os.tmpdir(), 'plinth-signals-'));
    sandbox = new NamespaceSandbox(
      loadSandboxSettings(
        { PLINTH_SANDBOX: 'namespaces', PLINTH_SANDBOX_POOL: '0', PLINTH_SANDBOX_UID_BASE: '340000', PLINTH_SANDBOX_UID_COUNT: '1000' },
        workRoot,
      ),
    );
    const report = await sandbox.start();
    assert.equal(report.mode, 'namespaces');
    assert.equal(report.privileges, ROOTLESS ? 'rootless' : 'root');
  });
  after(async () => {
    await sandbox.close();
    rmSync(workRoot, { recursive: true, force: true });
  });

  const withWorkspace = async <T>(fn: (w: StepWorkspace) => Promise<T>) => {
    const workspace = await sandbox.open();
    try {
      return await fn(workspace);
    } finally {
      await workspace.dispose();
    }
  };

  it('a child that counts its signals gets exactly one SIGINT, then one SIGTERM once the grace is over', async () => {
    const { output } = await withWorkspace((w) => stopOnceReady(w, COUNTING_CHILD, { graceMs: 1500, termGraceMs: 3000 }));
    assert.equal(output.match(/child got INT/g)?.length, 1, output);
    assert.equal(output.match(/child got TERM/g)?.length, 1, output);
  });

  it("the step's own shell traps work: one SIGINT reaches its trap", async () => {
    const command = `n=0; trap 'n=$((n+1)); echo "INT $n"' INT; trap 'echo TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done`;
    const { output, code } = await withWorkspace((w) => stopOnceReady(w, command, { graceMs: 1500, termGraceMs: 3000 }));
    assert.match(output, /^INT 1$/m, output);
    assert.doesNotMatch(output, /INT 2/, output);
    assert.match(output, /^TERM$/m);
    assert.equal(code, 0, 'the step ended as its own TERM trap said');
  });

  it('a SIGTERM handler that takes a second finishes it: the shell and the sandbox stay while it does', async () => {
    const command = `trap '' INT; trap 'sleep 1; echo cleaned up; exit 0' TERM; echo ready; while :; do sleep 0.05; done`;
    const { output, code } = await withWorkspace((w) => stopOnceReady(w, command, { graceMs: 300, termGraceMs: 5000 }));
    assert.match(output, /cleaned up/, output);
    assert.equal(code, 0);
  });

  it('a step that ignores SIGINT and SIGTERM is gone right after the grace, by SIGKILL', async () => {
    const command = `trap '' INT TERM; echo ready; while :; do sleep 0.05; done`;
    const { signal, stopMs } = await withWorkspace((w) => stopOnceReady(w, command, { graceMs: 500, termGraceMs: 500 }));
    assert.equal(signal, 'SIGKILL');
    assert.ok(stopMs >= 950 && stopMs < 3000, `ended ${Math.round(stopMs)} ms after the stop`);
  });
});

/**
 * The same through the engine: a cancel and a worker's drain each interrupt a running step once. Step
 * uids of their own: the hostile-step suite, which may run beside them, counts the default range's.
 */
describe('a cancelled or drained step is interrupted once', () => {
  let t: EngineTestApp;
  const ownUids = { ...FAST_ENGINE_ENV, PLINTH_SANDBOX_UID_BASE: '341000', PLINTH_SANDBOX_UID_COUNT: '1000' };
  const startWorker = () => t.startWorker({ sandbox: createSandbox(loadSandboxSettings(ownUids, undefined, 8)) });
  before(async () => {
    t = await startEngineTestApp();
  });
  after(async () => {
    await t.close();
  });

  async function runningStep() {
    const stack = await createStack(t, [{ id: 'slow', command: COUNTING_CHILD, timeoutSeconds: 120 }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'slow', 'RUNNING', 30_000);
    await waitFor('the step to be ready', async () => ((await logLines(t, step.id)).includes('ready') ? true : undefined), 30_000);
    return { run, step };
  }

  it('a cancel: one SIGINT, then one SIGTERM, and the run is cancelled', async () => {
    await startWorker();
    const { run, step } = await runningStep();
    assert.equal((await t.call('POST', `/pipeline-runs/${run.id}/cancel`)).status, 200);
    await waitFor(
      'the run to be cancelled',
      async () => ((await t.call('GET', `/pipeline-runs/${run.id}`)).body.data.status === 'CANCELLED' ? true : undefined),
      30_000,
    );
    const lines = await waitFor(
      "the step's last lines",
      async () => {
        const all = await logLines(t, step.id);
        return all.includes('child got TERM') ? all : undefined;
      },
      30_000,
    );
    assert.equal(lines.filter((l) => l === 'child got INT').length, 1, lines.join('\n'));
    assert.equal(lines.filter((l) => l === 'child got TERM').length, 1, lines.join('\n'));
  });

  it('a drain: the worker stopping interrupts its step once', async () => {
    await startWorker();
    const { run } = await runningStep();
    const [first] = await stepsOf(t, run.id);
    // All at once: a step handed back by one must not start again on another.
    await Promise.all(t.workers.map((worker) => worker.stop()));
    const lines = await logLines(t, first.id);
    assert.equal(lines.filter((l) => l === 'child got INT').length, 1, lines.join('\n'));
  });
});
