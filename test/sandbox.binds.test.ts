import assert from 'node:assert/strict';
import { once } from 'node:events';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import type { SandboxedProcess, StepBind, StepSandbox } from '../src/engine/sandbox/sandbox.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import { UnisolatedSandbox } from '../src/engine/sandbox/unisolated.ts';
import { runInWorkspace, STEP_TEST_PATH } from './helpers/sandbox.ts';

const PATH = STEP_TEST_PATH;
const run = runInWorkspace;

/** Resolves once the process printed `line`, so it is known to be running. */
async function started(proc: SandboxedProcess, line: string) {
  let output = '';
  await new Promise<void>((resolve) =>
    proc.child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      if (output.includes(line)) resolve();
    }),
  );
}

const exited = (proc: SandboxedProcess) => (proc.child.exitCode !== null || proc.child.signalCode !== null ? Promise.resolve() : once(proc.child, 'exit'));

describe('sandbox binds and workspaces of several processes', () => {
  let host: string;
  let cache: string;
  let tool: string;
  const sandboxes: [string, StepSandbox][] = [];

  before(async () => {
    host = mkdtempSync(path.join(os.tmpdir(), 'plinth-binds-'));
    chmodSync(host, 0o755);
    cache = path.join(host, 'cache');
    mkdirSync(cache, { mode: 0o755 });
    writeFileSync(path.join(cache, 'objects'), 'cached-object\n');
    tool = path.join(host, 'tool');
    writeFileSync(tool, '#!/bin/sh\necho "tool ran with $*"\n', { mode: 0o755 });
    const workRoot = path.join(host, 'work');
    const namespaced = new NamespaceSandbox(loadSandboxSettings({ PLINTH_SANDBOX: 'namespaces' }, workRoot));
    await namespaced.start();
    sandboxes.push(['namespaced', namespaced], ['off', new UnisolatedSandbox(loadSandboxSettings({ PLINTH_SANDBOX: 'off' }, workRoot))]);
  });
  after(async () => {
    for (const [, sandbox] of sandboxes) await sandbox.close();
    rmSync(host, { recursive: true, force: true });
  });

  it('namespaced: a read-only bind shows the host directory at its target under /plinth/, nosuid and nodev, and refuses writes', async () => {
    const workspace = await sandboxes[0][1].open();
    try {
      const binds: StepBind[] = [{ source: cache, target: '/plinth/cache', writable: false }];
      assert.equal(workspace.pathOf('/plinth/cache/objects', binds), '/plinth/cache/objects');
      const { code, output } = await run(
        workspace,
        ['cat /plinth/cache/objects', 'touch /plinth/cache/new 2>/dev/null && echo "wrote the bind"', 'grep " /plinth/cache " /proc/self/mountinfo'].join('\n'),
        { binds },
      );
      assert.equal(code, 0, output);
      assert.match(output, /^cached-object$/m);
      assert.doesNotMatch(output, /wrote the bind/);
      const options = /\/plinth\/cache (\S+)/.exec(output)?.[1].split(',') ?? [];
      for (const option of ['ro', 'nosuid', 'nodev']) assert.ok(options.includes(option), `mount options ${options.join(',')}`);
      assert.ok(!existsSync(path.join(cache, 'new')));
    } finally {
      await workspace.dispose();
    }
  });

  it("namespaced: a writable bind lets the step's uid write into the host directory; a file bind makes a host binary runnable", async () => {
    const workspace = await sandboxes[0][1].open();
    const writable = path.join(host, `writable-${workspace.uid}`);
    mkdirSync(writable);
    chownSync(writable, workspace.uid, workspace.uid);
    try {
      const binds: StepBind[] = [
        { source: writable, target: '/plinth/git/cache', writable: true },
        { source: tool, target: '/plinth/bin/tofu', writable: false },
      ];
      const { code, output } = await run(workspace, 'echo from-step > /plinth/git/cache/written && /plinth/bin/tofu init', { binds });
      assert.equal(code, 0, output);
      assert.match(output, /^tool ran with init$/m);
      assert.equal(readFileSync(path.join(writable, 'written'), 'utf8'), 'from-step\n');
    } finally {
      await workspace.dispose();
    }
  });

  for (const [index, name] of [
    [0, 'namespaced'],
    [1, 'off'],
  ] as const) {
    it(`${name}: targets outside /plinth/, not normal or overlapping, and missing sources are refused`, async () => {
      const workspace = await sandboxes[index][1].open();
      try {
        for (const target of ['/usr/bin/tofu', '/plinth/', '/plinth', '/plinth/../etc', '/plinth//x', 'plinth/x', '/plinth/x/']) {
          await assert.rejects(
            () => workspace.spawn({ command: 'true', env: {}, binds: [{ source: cache, target, writable: false }] }),
            /under \/plinth\//,
            target,
          );
        }
        await assert.rejects(
          () =>
            workspace.spawn({
              command: 'true',
              env: {},
              binds: [
                { source: cache, target: '/plinth/a', writable: false },
                { source: cache, target: '/plinth/a/b', writable: false },
              ],
            }),
          /overlap/,
        );
        await assert.rejects(
          () => workspace.spawn({ command: 'true', env: {}, binds: [{ source: path.join(host, 'missing'), target: '/plinth/a', writable: false }] }),
          /existing file or directory/,
        );
        assert.throws(() => workspace.pathOf('/plinth/elsewhere', [{ source: cache, target: '/plinth/cache', writable: false }]), /under no bind/);
      } finally {
        await workspace.dispose();
      }
    });

    it(`${name}: processes spawned one after another share the workspace's files${name === 'namespaced' ? ', each with its own /tmp' : ''}`, async () => {
      const workspace = await sandboxes[index][1].open();
      try {
        const tmpMark = `plinth-binds-${process.pid}-${index}`;
        const first = await run(workspace, `echo checked-out > state && mkdir -p sub && echo mark > /tmp/${tmpMark}`);
        assert.equal(first.code, 0, first.output);
        const second = await run(workspace, `cat ../state; test -e /tmp/${tmpMark} && echo "tmp shared" || echo "tmp fresh"`, { workingDirectory: 'sub' });
        assert.equal(second.code, 0, second.output);
        assert.match(second.output, /^checked-out$/m);
        if (name === 'namespaced') assert.match(second.output, /^tmp fresh$/m);
        rmSync(`/tmp/${tmpMark}`, { force: true });
      } finally {
        await workspace.dispose();
      }
    });

    it(`${name}: dispose() kills every process still running, not only the last one spawned`, async () => {
      const workspace = await sandboxes[index][1].open();
      const first = await workspace.spawn({ command: 'echo up; exec sleep 600', env: { PATH } });
      await started(first, 'up');
      const second = await workspace.spawn({ command: 'echo up; exec sleep 600', env: { PATH } });
      await started(second, 'up');
      await workspace.dispose();
      await Promise.all([exited(first), exited(second)]);
      assert.ok(first.child.signalCode !== null || first.child.exitCode !== 0);
      assert.ok(second.child.signalCode !== null || second.child.exitCode !== 0);
    });
  }

  it('off: nothing can be mounted, so pathOf names the host source and the process reaches the bind there', async () => {
    const workspace = await sandboxes[1][1].open();
    try {
      const binds: StepBind[] = [
        { source: cache, target: '/plinth/cache', writable: false },
        { source: tool, target: '/plinth/bin/tofu', writable: false },
      ];
      const objects = workspace.pathOf('/plinth/cache/objects', binds);
      assert.equal(objects, path.join(cache, 'objects'));
      assert.equal(workspace.pathOf('/plinth/bin/tofu', binds), tool);
      const { code, output } = await run(workspace, `cat '${objects}' && '${workspace.pathOf('/plinth/bin/tofu', binds)}' plan`, { binds });
      assert.equal(code, 0, output);
      assert.match(output, /^cached-object$/m);
      assert.match(output, /^tool ran with plan$/m);
      assert.equal(workspace.uid, process.getuid!());
    } finally {
      await workspace.dispose();
    }
  });
});
