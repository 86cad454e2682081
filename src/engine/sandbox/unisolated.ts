import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawnGuarded } from './process.ts';
import { checkBinds, hostPathOf } from './binds.ts';
import { guardDisk } from './disk-watch.ts';
import type { IsolationReport, SandboxedProcess, SandboxSettings, StepSandbox, StepWorkspace } from './sandbox.ts';
import { relativeWorkingDirectory, removeTree } from './workspaces.ts';

/**
 * In the unisolated mode the step runs as the worker's own user, on the worker's filesystem, under this
 * wrapper. A guard in the step's own process group blocks reading a pipe whose other end only the
 * worker holds; should the worker die (even by SIGKILL) the kernel closes that end, the guard reads
 * end-of-file and kills the whole group. The guard ignores SIGTERM so that it still stands while a
 * stopped step has its grace period, and it keeps away from stdout and stderr, so it never holds the log
 * pipes open. The command runs in the group leader itself. A step that leaves its group (setsid) escapes it:
 * that, and everything else the sandbox prevents, is what this mode gives up.
 */
const GUARDED_SHELL = [
  'exec 3<&0',
  "(trap '' TERM; while read -r _; do :; done; kill -KILL 0) <&3 >/dev/null 2>&1 &",
  'exec 3<&-',
  // `mkdir` only when needed: it is a process of its own, on every step's path.
  '{ cd -- "$2" 2>/dev/null || { mkdir -p -- "$2" && cd -- "$2"; }; } || exit 1',
  // The command in this same shell (no second one on the step's path), parsed as `sh -c` would parse
  // it: `$1` is expanded before eval runs, and `set --` leaves the command no positional parameters.
  'eval "set --; $1" </dev/null',
].join('\n');

/**
 * UnisolatedSandbox is `PLINTH_SANDBOX=off`: the explicit single-tenant opt-out, where every step can
 * read what the worker can (its environment, the data directory, other steps' files).
 */
export class UnisolatedSandbox implements StepSandbox {
  constructor(private readonly settings: SandboxSettings) {}

  async start(): Promise<IsolationReport> {
    return {
      mode: 'off',
      requested: 'off',
      privileges: null,
      network: 'host',
      cgroup: 'none',
      limits: { maxProcesses: null, memoryMb: null, cpus: null },
      detail: "PLINTH_SANDBOX=off: single-tenant mode, steps run unisolated as the worker's own user and can read everything it can",
    };
  }

  replenish(): void {}

  async close(): Promise<void> {}

  async open(): Promise<StepWorkspace> {
    const workDir = await mkdtemp(path.join(this.settings.workRoot ?? os.tmpdir(), 'plinth-step-'));
    const running = new Set<SandboxedProcess>();
    // Here the step could write anywhere the worker can; its workspace is still held to the limits.
    const disk = guardDisk(this.settings.limits, { dir: workDir, inOwnUserNamespace: false }, () => {
      for (const proc of running) proc.kill();
    });
    return {
      uid: process.getuid?.() ?? -1,
      get diskExceeded() {
        return disk.overrun;
      },
      spawn: async (spec) => {
        // Binds cannot be mounted here: checked all the same, and reached at their sources (pathOf).
        checkBinds(spec.binds);
        const proc = spawnGuarded({
          file: 'sh',
          args: ['-c', GUARDED_SHELL, 'plinth-step', spec.command, relativeWorkingDirectory(spec.workingDirectory)],
          cwd: workDir,
          env: { HOME: workDir, ...spec.env, PWD: workDir },
        });
        running.add(proc);
        // `close`, not `exit`: the group (the guard) may outlive its leader until the runner kills it.
        proc.child.once('close', () => running.delete(proc));
        if (disk.overrun) proc.kill();
        return proc;
      },
      pathOf: hostPathOf,
      dispose: async () => {
        disk.stop();
        for (const proc of running) proc.kill();
        await removeTree(workDir);
      },
    };
  }
}
