import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { detectCgroups, type CgroupHost, type StepCgroup } from './cgroups.ts';
import { bindArgs, checkBinds, insideBinds } from './binds.ts';
import { SANDBOX_INIT, shellAssignments } from './init-script.ts';
import { spawnGuarded } from './process.ts';
import { SandboxUnavailableError, type IsolationReport, type SandboxSettings, type SandboxedProcess, type StepProcessSpec, type StepSandbox, type StepWorkspace } from './sandbox.ts';
import { buildTemplate } from './template.ts';
import { claimWorkspace, ensurePrivateRoot, relativeWorkingDirectory, sweepStaleWorkspaces, type ClaimedWorkspace } from './workspaces.ts';

/** The only PATH the sandbox's root processes see: never the worker's, never the tenant's. */
const SYSTEM_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
const TOOLS = ['unshare', 'setpriv', 'prlimit', 'pivot_root', 'mount', 'umount', 'cp', 'tar', 'sh'];

/** Returns why this host cannot run namespaced steps, or undefined when it can (the probe then tries one). */
export type HostCheck = () => Promise<string | undefined>;

const defaultHostCheck: HostCheck = async () => {
  if (process.platform !== 'linux') return `namespaces need Linux, this is ${process.platform}`;
  if (process.getuid?.() !== 0) return 'the worker must run as root to give each step its own uid and namespaces';
  const missing = TOOLS.filter((tool) => !SYSTEM_PATH.split(':').some((dir) => existsSync(path.join(dir, tool))));
  return missing.length ? `missing ${missing.join(', ')} (util-linux)` : undefined;
};

/** A command that fails unless the step sees what the sandbox promises; its output names what failed. */
const PROBE_COMMAND = [
  'test "$(id -u)" != 0 || { echo "runs as root"; exit 1; }',
  `test ! -e /proc/${process.pid} || test "$(cat /proc/${process.pid}/comm 2>/dev/null)" != node || { echo "sees the worker"; exit 1; }`,
  'test "$HOME" = /workspace && touch /workspace/.probe && rm /workspace/.probe || { echo "no writable workspace"; exit 1; }',
  '! touch /usr/.plinth-probe 2>/dev/null || { echo "system directories are writable"; exit 1; }',
].join('\n');

/**
 * NamespaceSandbox runs each step in new PID, mount, IPC and UTS namespaces (and network, with
 * `PLINTH_SANDBOX_NETWORK=none`) through util-linux `unshare`, as a uid of its own, inside cgroups with
 * the step limits. SANDBOX_INIT (init-script.ts) says what the step sees and how it ends.
 */
/** Probes by settings: every worker of a process (tests start many) shares one, the host does not change. */
const probes = new Map<string, Promise<Probed>>();

interface Probed {
  report: IsolationReport;
  template: string;
  cgroups: CgroupHost | undefined;
}

export class NamespaceSandbox implements StepSandbox {
  private started: Promise<IsolationReport> | undefined;
  private cgroups: CgroupHost | undefined;
  private template = '';
  private readonly root: string;

  constructor(
    private readonly settings: SandboxSettings,
    private readonly hostCheck: HostCheck = defaultHostCheck,
  ) {
    this.root = path.join(settings.workRoot ?? os.tmpdir(), 'plinth-sandboxes');
  }

  start(): Promise<IsolationReport> {
    this.started ??= this.probeOnce().then(({ report, template, cgroups }) => {
      this.template = template;
      this.cgroups = cgroups;
      if (report.mode !== 'namespaces' && this.settings.mode === 'namespaces') {
        throw new Error(`PLINTH_SANDBOX=namespaces, but this host cannot isolate steps: ${report.detail}`);
      }
      return report;
    });
    return this.started;
  }

  async open(): Promise<StepWorkspace> {
    const report = await this.start();
    if (report.mode !== 'namespaces') throw new SandboxUnavailableError(`Script steps need isolation and this host has none (${report.detail}); an operator running a single tenant can set PLINTH_SANDBOX=off`);
    return this.openWorkspace();
  }

  private probeOnce(): Promise<Probed> {
    if (this.hostCheck !== defaultHostCheck) return this.probe();
    const key = JSON.stringify({ ...this.settings, root: this.root });
    let probed = probes.get(key);
    if (!probed) probes.set(key, (probed = this.probe()));
    return probed;
  }

  private unavailable(detail: string): IsolationReport {
    return { mode: 'unavailable', requested: this.settings.mode, network: null, cgroup: null, limits: { maxProcesses: null, memoryMb: null, cpus: null }, detail };
  }

  private async probe(): Promise<Probed> {
    const failed = (detail: string) => ({ report: this.unavailable(detail), template: '', cgroups: undefined });
    const cannot = await this.hostCheck();
    if (cannot) return failed(cannot);
    try {
      await ensurePrivateRoot(this.root);
      await sweepStaleWorkspaces(this.root, this.settings.uidBase, this.settings.uidCount);
      this.template = await buildTemplate(this.root);
      this.cgroups = await detectCgroups();
      // A cgroup whose workspace still exists may belong to a step another worker is starting.
      await this.cgroups.sweep((name) => !existsSync(path.join(this.root, name)));
      const output = await this.tryOnce();
      if (output !== undefined) return failed(`a probe step failed: ${output}`);
    } catch (error) {
      return failed(`the sandbox could not be set up: ${(error as Error).message}`);
    }
    const { limits, network } = this.settings;
    const enforced = this.cgroups.enforced;
    const report: IsolationReport = {
      mode: 'namespaces',
      requested: this.settings.mode,
      network,
      cgroup: this.cgroups.version,
      // Without a pids cgroup the process limit still holds: RLIMIT_NPROC counts the step's own uid.
      limits: { maxProcesses: limits.maxProcesses, memoryMb: enforced.memory ? limits.memoryMb : null, cpus: enforced.cpu ? limits.cpus : null },
      detail: `pid, mount, ipc, uts${network === 'none' ? ', net' : ''} namespaces; a uid of its own per step from ${this.settings.uidBase}; ${this.cgroups.detail}`,
    };
    return { report, template: this.template, cgroups: this.cgroups };
  }

  /** Runs PROBE_COMMAND as a real step; returns its output when it failed. */
  private async tryOnce(): Promise<string | undefined> {
    const workspace = await this.openWorkspace();
    try {
      const proc = workspace.spawn({ command: PROBE_COMMAND, env: { PATH: SYSTEM_PATH } });
      let output = '';
      proc.child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      proc.child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      // Generous: a probe that fails only because the host was busy would leave this worker unable to run steps.
      const timer = setTimeout(() => proc.kill(), 30_000);
      const code = await new Promise<number | null>((resolve) => proc.child.on('close', (c) => resolve(c)));
      clearTimeout(timer);
      return code === 0 ? undefined : (output.trim().split('\n').slice(-3).join('; ') || `exit ${code}`);
    } finally {
      await workspace.dispose();
    }
  }

  private async openWorkspace(): Promise<StepWorkspace> {
    const { uidBase, uidCount, limits } = this.settings;
    const claim = await claimWorkspace(this.root, uidBase, uidCount);
    let cgroup: StepCgroup | undefined;
    try {
      cgroup = await this.cgroups?.create(String(claim.uid), limits);
    } catch (error) {
      await rm(claim.dir, { recursive: true, force: true });
      throw error;
    }
    const running = new Set<SandboxedProcess>();
    return {
      uid: claim.uid,
      spawn: (spec) => {
        const proc = this.spawnIn(claim, cgroup, spec, relativeWorkingDirectory(spec.workingDirectory));
        running.add(proc);
        proc.child.once('exit', () => running.delete(proc));
        return proc;
      },
      pathOf: insideBinds,
      dispose: async () => {
        for (const proc of running) proc.kill();
        await cgroup?.destroy();
        await rm(claim.dir, { recursive: true, force: true });
      },
    };
  }

  private spawnIn(claim: ClaimedWorkspace, cgroup: StepCgroup | undefined, spec: StepProcessSpec, cwd: string): SandboxedProcess {
    const { limits, network } = this.settings;
    const namespaces = ['--pid', '--fork', '--kill-child', '--mount', '--ipc', '--uts', ...(network === 'none' ? ['--net'] : [])];
    const initArgs = [claim.mountPoint, claim.workspace, String(claim.uid), String(limits.maxProcesses), (cgroup?.procsFiles ?? []).join(' '), this.template, spec.command, cwd, String(limits.memoryMb), ...bindArgs(checkBinds(spec.binds))];
    return spawnGuarded({
      file: 'unshare',
      args: [...namespaces, 'sh', '-c', SANDBOX_INIT, 'plinth-init', ...initArgs],
      env: { PATH: SYSTEM_PATH },
      cwd: claim.dir,
      fd3: shellAssignments({ HOME: '/workspace', ...spec.env }),
      groupOutlivesLeader: false,
    });
  }
}
