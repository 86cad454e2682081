import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import { SPAWNER_COMM } from '../src/engine/sandbox/spawner.ts';
import { hostProcesses, processTree, waitFor } from './helpers/engine.ts';
import { isSandboxMachinery, runInWorkspace } from './helpers/sandbox.ts';

const run = runInWorkspace;

/**
 * A sandbox's claim (its uid, directories and cgroup) is made once and serves one step after another:
 * the next step, whoever's, must find nothing of the last one: no file, no process, no changed mode.
 */
describe('a claim that serves one step after another', () => {
  let workRoot: string;
  let sandbox: NamespaceSandbox;
  before(async () => {
    workRoot = mkdtempSync(path.join(os.tmpdir(), 'plinth-reuse-'));
    // No warm pool: each open() takes the claim the last step left, so reuse is certain.
    sandbox = new NamespaceSandbox(loadSandboxSettings({ PLINTH_SANDBOX: 'namespaces', PLINTH_SANDBOX_POOL: '0', PLINTH_STEP_MAX_PROCESSES: '64' }, workRoot));
    const report = await sandbox.start();
    assert.equal(report.mode, 'namespaces', report.detail);
  });
  after(async () => {
    await sandbox.close();
    rmSync(workRoot, { recursive: true, force: true });
  });

  it('hands the next step the same uid with an empty workspace, /tmp and /dev/shm, mode 0700, and no process of the last step', async () => {
    const first = await sandbox.open();
    const planted = await run(
      first,
      [
        'echo secret > /workspace/file; mkdir -p /workspace/dir/deep; echo secret > /workspace/dir/deep/f; ln -s /etc/passwd /workspace/link',
        'echo secret > /tmp/t; echo secret > /dev/shm/s; chmod 777 /workspace',
        'setsid sleep 611 & (sleep 612 &) & nohup sleep 613 >/dev/null 2>&1 &',
        'echo planted',
      ].join('\n'),
    );
    assert.equal(planted.code, 0, planted.output);
    await first.dispose();
    assert.ok(!hostProcesses().some((p) => p.uid === first.uid), 'no process of the last step is left');

    const second = await sandbox.open();
    assert.equal(second.uid, first.uid, 'the claim was reused');
    const seen = await run(
      second,
      [
        'echo "workspace: $(ls -A /workspace | tr "\\n" " ")"',
        'echo "tmp: $(ls -A /tmp | tr "\\n" " ")"',
        'echo "shm: $(ls -A /dev/shm | tr "\\n" " ")"',
        'echo "mode: $(stat -c %a /workspace)"',
        'echo "sleeps: $(ps -e -o comm= | grep -c sleep)"',
      ].join('\n'),
    );
    await second.dispose();
    assert.equal(seen.code, 0, seen.output);
    assert.match(seen.output, /^workspace: $/m);
    assert.match(seen.output, /^tmp: $/m);
    assert.match(seen.output, /^shm: $/m);
    assert.match(seen.output, /^mode: 700$/m);
    assert.match(seen.output, /^sleeps: 0$/m);
  });

  it('keeps no file of a spawn with binds (its mount table and mount points) for the next step', async () => {
    const source = mkdtempSync(path.join(os.tmpdir(), 'plinth-reuse-bind-'));
    try {
      const workspace = await sandbox.open();
      const claimDir = path.join(workRoot, 'plinth-sandboxes', String(workspace.uid));
      const before = readdirSync(claimDir).sort();
      const proc = await workspace.spawn({
        command: 'ls /plinth/src >/dev/null',
        env: { PATH: '/usr/bin:/bin' },
        binds: [{ source, target: '/plinth/src', writable: false }],
      });
      await new Promise((resolve) => proc.child.on('close', resolve));
      assert.ok(readdirSync(claimDir).length > before.length, 'the spawn with binds wrote files of its own');
      await workspace.dispose();
      assert.deepEqual(readdirSync(claimDir).sort(), before);
    } finally {
      rmSync(source, { recursive: true, force: true });
    }
  });

  it("keeps a kept claim's cgroup when a worker with another work root starts and sweeps stale cgroups", async () => {
    const workspace = await sandbox.open();
    await run(workspace, 'true');
    await workspace.dispose();
    const otherRoot = mkdtempSync(path.join(os.tmpdir(), 'plinth-reuse-other-'));
    const other = new NamespaceSandbox(loadSandboxSettings({ PLINTH_SANDBOX: 'namespaces', PLINTH_SANDBOX_POOL: '0' }, otherRoot));
    try {
      assert.equal((await other.start()).mode, 'namespaces');
    } finally {
      await other.close();
      rmSync(otherRoot, { recursive: true, force: true });
    }
    const again = await sandbox.open();
    assert.equal(again.uid, workspace.uid, 'the kept claim is reused');
    const { code, output } = await run(again, 'echo ran');
    await again.dispose();
    assert.equal(code, 0, output);
    assert.equal(output, 'ran\n');
  });

  it('removes every kept claim, its directory and its uid, when the sandbox closes', async () => {
    const workspace = await sandbox.open();
    await run(workspace, 'true');
    await workspace.dispose();
    assert.ok(
      readdirSync(path.join(workRoot, 'plinth-sandboxes')).some((name) => /^\d+$/.test(name)),
      'a claim is kept between steps',
    );
    await sandbox.close();
    await waitFor(
      'every claim to be removed',
      async () => (readdirSync(path.join(workRoot, 'plinth-sandboxes')).some((name) => /^\d+$/.test(name)) ? undefined : true),
      5_000,
    );
  });
});

describe('sandboxes built ahead', () => {
  it('are built at a lower priority, and the step that takes one runs at the normal priority', async () => {
    const workRoot = mkdtempSync(path.join(os.tmpdir(), 'plinth-nice-'));
    const sandbox = new NamespaceSandbox(loadSandboxSettings({ PLINTH_SANDBOX: 'namespaces', PLINTH_SANDBOX_POOL: '2' }, workRoot));
    try {
      assert.equal((await sandbox.start()).mode, 'namespaces');
      // The spawner lowers each one just after it forks it: found a moment earlier, it is still at 0.
      await waitFor(
        'two sandboxes built ahead, waiting at nice 10',
        async () => {
          // Started by this process's spawner (a child of this process), not by this process itself.
          const ours = new Set(processTree(process.pid));
          const all = hostProcesses();
          const comms = new Map(all.map((p) => [p.pid, p.comm]));
          const found = all.filter((p) => ours.has(p.pid) && comms.get(p.ppid) === SPAWNER_COMM && p.ppid !== process.pid && isSandboxMachinery(p.comm));
          return found.length === 2 && found.every((p) => os.getPriority(p.pid) === 10) ? found : undefined;
        },
        10_000,
      );
      const workspace = await sandbox.open();
      const { code, output } = await run(workspace, 'nice; sh -c nice');
      await workspace.dispose();
      assert.equal(code, 0, output);
      assert.equal(output, '0\n0\n', 'the step and what it starts run at nice 0');
    } finally {
      await sandbox.close();
      rmSync(workRoot, { recursive: true, force: true });
    }
  });
});
