import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { Logger } from '../../platform/logger.ts';
import { detectCgroups, type CgroupHost, type StepCgroup } from './cgroups.ts';
import { guardDisk } from './disk-watch.ts';
import { BIND_ROOT, checkBinds, insideBinds, type CheckedBind } from './binds.ts';
import { loopbackEndpoints, PROXY_PORT, serveStepEgress, type ServedEgress } from './egress.ts';
import { ROOTLESS_QUOTAS, SANDBOX_INIT, stepFstab, stepScript } from './init-script.ts';
import { WarmPool } from './pool.ts';
import type { AllowList } from '../../platform/outbound/address-policy.ts';
import {
  ROOTLESS,
  SYSTEM_PATH,
  SandboxUnavailableError,
  type IsolationReport,
  type OpenOptions,
  type SandboxSettings,
  type SandboxedProcess,
  type StepSandbox,
  type StepWorkspace,
} from './sandbox.ts';
import { NetworkLostError, sharedSpawner, type NetworkPorts, type SpawnedProcess, type SpawnSpec, type StepNetwork } from './spawner.ts';
import { buildTemplate, systemDirs } from './template.ts';
import {
  claimWorkspace,
  ensurePrivateRoot,
  removeStepFiles,
  workDirectory,
  relativeWorkingDirectory,
  resetWorkspace,
  sweepStaleWorkspaces,
  type ClaimedWorkspace,
} from './workspaces.ts';

/** What the worker runs on the host: the template's copy, the step's shell, the init's tools (util-linux), and the disk measure's (disk-watch.ts). */
const TOOLS = ['tar', 'sh', 'unshare', 'setpriv', 'pivot_root', 'mount', 'umount', 'nice', 'find', 'head', 'wc', 'du', 'cut'];
/** What a step's own network takes besides: `ip` brings its loopback up (`none` too), `nsenter` starts the sandbox in it. */
const NETWORK_TOOLS = ['ip', 'nsenter'];

/** Returns why this host cannot run namespaced steps, or undefined when it can (the probe then tries one). */
export type HostCheck = (tools: string[]) => Promise<string | undefined>;

const defaultHostCheck: HostCheck = async (tools) => {
  if (process.platform !== 'linux') return `namespaces need Linux, this is ${process.platform}`;
  const missing = tools.filter((tool) => !SYSTEM_PATH.split(':').some((dir) => existsSync(path.join(dir, tool))));
  return missing.length ? `missing ${missing.join(', ')} on ${SYSTEM_PATH}` : undefined;
};

const run = promisify(execFile);

const quotaArguments = Object.entries(ROOTLESS_QUOTAS).flatMap(([name, value]) => [name, String(value)]);

/** Whether the mount holding `dir` is `noexec` (the longest mount point of /proc/self/mountinfo that contains it). */
function noexecAt(dir: string): boolean {
  let best = { point: '', options: [] as string[] };
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [, , , , point, options] = line.split(' ');
    if (point === undefined || options === undefined) continue;
    const inside = point === '/' || dir === point || dir.startsWith(`${point}/`);
    if (inside && point.length >= best.point.length) best = { point, options: options.split(',') };
  }
  return best.options.includes('noexec');
}

/**
 * Whether a rootless sandbox can cap its share of the per-user counts (SANDBOX_INIT): not where
 * /proc/sys is mounted read-only, as container runtimes mount it.
 */
async function quotasCappable(): Promise<boolean> {
  return run('unshare', ['--user', '--map-root-user', 'sh', '-c', 'test -w /proc/sys/user/max_user_namespaces'], {
    env: { PATH: SYSTEM_PATH },
    timeout: 10_000,
  }).then(
    () => true,
    () => false,
  );
}

/** Why this user cannot build rootless sandboxes, with the fixes; undefined when it can. */
async function userNamespaceProblem(): Promise<string | undefined> {
  const help = await run('unshare', ['--help'], { env: { PATH: SYSTEM_PATH } }).then(
    (r) => r.stdout,
    () => '',
  );
  if (!help.includes('--map-user')) return 'rootless steps need util-linux 2.36 or later (`unshare --map-user`): upgrade util-linux, or run the worker as root';
  try {
    await run('unshare', ['--user', '--map-root-user', '--pid', '--fork', '--mount', 'true'], { env: { PATH: SYSTEM_PATH }, timeout: 10_000 });
    return undefined;
  } catch (error) {
    const said =
      String((error as { stderr?: string }).stderr ?? '')
        .trim()
        .split('\n')
        .pop() || (error as Error).message;
    return `this user cannot make user namespaces (${said}): allow unprivileged user namespaces (sysctl user.max_user_namespaces above 0; kernel.unprivileged_userns_clone=1 where the kernel has it; kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile allowing them for node, on Ubuntu 23.10 and later), or run the worker as root`;
  }
}

/** A command that fails unless the step sees what the sandbox promises; its output names what failed. */
const PROBE_COMMAND = [
  'test "$(id -u)" != 0 || { echo "runs as root"; exit 1; }',
  `test ! -e /proc/${process.pid} || test "$(cat /proc/${process.pid}/comm 2>/dev/null)" != node || { echo "sees the worker"; exit 1; }`,
  'test "$HOME" = /workspace && touch /workspace/.probe && rm /workspace/.probe || { echo "no writable workspace"; exit 1; }',
  '! touch /usr/.plinth-probe 2>/dev/null || { echo "system directories are writable"; exit 1; }',
].join('\n');

/** Probes by settings: every worker of a process (tests start many) shares one, the host does not change. */
const probes = new Map<string, Promise<Probed>>();

interface Probed {
  report: IsolationReport;
  template: string;
  cgroups: CgroupHost | undefined;
  dirs: string[];
}

/**
 * NamespaceSandbox runs each step in new PID, mount, IPC, UTS and (but with the `host` network) network
 * namespaces, built by the shell init, as a uid of its own (rootless: in a user namespace of its own),
 * inside cgroups with the step limits where the host has them. SANDBOX_INIT (init-script.ts) says what
 * the step sees and how it ends.
 */
export class NamespaceSandbox implements StepSandbox {
  private started: Promise<IsolationReport> | undefined;
  private cgroups: CgroupHost | undefined;
  private template = '';
  private systemDirs: string[] = [];
  private resolverFiles: Array<{ source: string; name: string }> = [];
  private log: Logger = pino({ level: 'silent' });
  /** Under the `policy` network: where a step's proxy listens, and the ports forwarded to the host's loopback. */
  private readonly network: NetworkPorts | undefined;
  /** The variables that send a step's clients through its proxy (empty without the `policy` network). */
  private readonly proxyEnv: Record<string, string>;
  private readonly root: string;
  /** Sandboxes built ahead, each waiting for the one step it will serve (PLINTH_SANDBOX_POOL). */
  private readonly pool: WarmPool<Warm>;
  /**
   * Claims whose step ended, emptied and ready for the next one: their uid, directories, passwd, fstab
   * and cgroup are made once, not per step (`recycle`). At most `maxFree`; the rest are removed.
   */
  private readonly free: Claimed[] = [];
  private readonly maxFree: number;
  /**
   * Step cgroups are named `<cgroupTag>-<uid>`, the tag naming this work root: the cgroup base is shared
   * by every worker of the host, and a worker's sweep must only take what its own root no longer claims
   * (a claim kept for reuse has an empty cgroup for as long as it waits: another root's sweep took it).
   */
  private readonly cgroupTag: string;
  private closed = false;
  private refillTimer: NodeJS.Timeout | undefined;
  private refillAsked: number | undefined;

  constructor(
    private readonly settings: SandboxSettings,
    private readonly hostCheck: HostCheck = defaultHostCheck,
    onPoolError: (error: unknown) => void = () => {},
  ) {
    this.root = workDirectory(settings.workRoot, 'plinth-sandboxes');
    this.maxFree = Math.max(4, settings.poolSize);
    this.cgroupTag = createHash('sha256').update(this.root).digest('hex').slice(0, 8);
    this.network = settings.network === 'policy' ? stepNetwork(loopbackEndpoints(settings.egress)) : undefined;
    this.proxyEnv = this.network ? proxyVariables(this.network.proxyPort) : {};
    this.pool = new WarmPool(
      settings.poolSize,
      () => this.makeWarm(),
      (w) => isRunning(w.first.proc),
      async (w) => {
        await retire(w.first.proc);
        await this.destroy(w.claimed, []);
      },
      onPoolError,
    );
  }

  start(log?: Logger): Promise<IsolationReport> {
    if (log) this.log = log;
    this.started ??= this.probeOnce().then(({ report, template, cgroups, dirs }) => {
      this.template = template;
      this.cgroups = cgroups;
      this.systemDirs = dirs;
      this.resolverFiles = this.stepResolverFiles();
      if (report.mode !== 'namespaces' && this.settings.mode === 'namespaces') {
        throw new Error(`PLINTH_SANDBOX=namespaces, but this host cannot isolate steps: ${report.detail}`);
      }
      if (report.mode === 'namespaces') this.pool.fill();
      return report;
    });
    return this.started;
  }

  /**
   * Refills the warm pool once this worker's steps leave it a quiet moment: REFILL_QUIET_MS after the
   * last step's outcome, at most REFILL_MAX_WAIT_MS after the first that asked. A refill spawns (a fork
   * that blocks the event loop until the child has exec'd) and builds (about 6 ms of CPU, at nice 10):
   * done right after a commit it stood between that step's commit and the next step's claim, and beside
   * the completion of a parallel step. A take that finds the pool empty still refills at once.
   */
  replenish(): void {
    const now = Date.now();
    this.refillAsked ??= now;
    clearTimeout(this.refillTimer);
    const wait = Math.min(REFILL_QUIET_MS, Math.max(0, this.refillAsked + REFILL_MAX_WAIT_MS - now));
    this.refillTimer = setTimeout(() => {
      this.refillAsked = undefined;
      this.pool.fill();
    }, wait);
    this.refillTimer.unref();
  }

  /** Destroys the sandboxes built ahead and the claims kept for reuse; an open() afterwards builds them again. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.refillTimer);
    this.refillAsked = undefined;
    await this.pool.close();
    await Promise.all(this.free.splice(0).map((claimed) => this.destroy(claimed, [])));
  }

  async open(options: OpenOptions = {}): Promise<StepWorkspace> {
    this.closed = false;
    const report = await this.start();
    if (report.mode !== 'namespaces')
      throw new SandboxUnavailableError(
        `Script steps need isolation and this host has none (${report.detail}); an operator running a single tenant can set PLINTH_SANDBOX=off`,
      );
    return this.openWorkspace(options.egressNarrowing);
  }

  /**
   * The step's /etc/resolv.conf and /etc/hosts, bound, not copied, so a change of the host's reaches
   * the next step; under the `policy` network, its resolver is the worker's relay instead.
   */
  private stepResolverFiles() {
    const hosts = existsSync('/etc/hosts') ? [{ source: '/etc/hosts', name: 'hosts' }] : [];
    if (this.network) return [{ source: path.join(this.root, 'resolv.conf'), name: 'resolv.conf' }, ...hosts];
    return existsSync('/etc/resolv.conf') ? [{ source: '/etc/resolv.conf', name: 'resolv.conf' }, ...hosts] : hosts;
  }

  private probeOnce(): Promise<Probed> {
    if (this.hostCheck !== defaultHostCheck) return this.probe();
    const key = JSON.stringify({ ...this.settings, root: this.root });
    let probed = probes.get(key);
    if (!probed) {
      probed = this.probe();
      probes.set(key, probed);
    }
    return probed;
  }

  private unavailable(detail: string): IsolationReport {
    return {
      mode: 'unavailable',
      requested: this.settings.mode,
      privileges: null,
      network: null,
      cgroup: null,
      limits: { maxProcesses: null, memoryMb: null, cpus: null },
      detail,
    };
  }

  private async probe(): Promise<Probed> {
    const failed = (detail: string) => ({ report: this.unavailable(detail), template: '', cgroups: undefined, dirs: [] });
    const cannot = (await this.hostCheck(TOOLS)) ?? (ROOTLESS ? await userNamespaceProblem() : undefined);
    if (cannot) return failed(cannot);
    const network = this.settings.network;
    const noNetwork = network !== 'host' && (await this.hostCheck(network === 'policy' ? NETWORK_TOOLS : ['ip']));
    if (noNetwork && network === 'policy')
      return failed(
        `${noNetwork}: each step's own network (PLINTH_SANDBOX_NETWORK=policy) needs \`ip\` (iproute2) and \`nsenter\` (util-linux); install them, or set PLINTH_SANDBOX_NETWORK=none (steps get no network) or host (steps share the host's network: an explicit opt-out)`,
      );
    if (noNetwork)
      return failed(
        `${noNetwork}: a step's empty network (PLINTH_SANDBOX_NETWORK=none) needs \`ip\` (iproute2) to bring its loopback up; install it, or set PLINTH_SANDBOX_NETWORK=host (steps share the host's network: an explicit opt-out)`,
      );
    try {
      await ensurePrivateRoot(this.root);
      await sweepStaleWorkspaces(this.root, this.settings.uidBase, this.settings.uidCount);
      this.template = await buildTemplate(this.root);
      this.systemDirs = await systemDirs();
      if (this.network) await writeFile(path.join(this.root, 'resolv.conf'), STEP_RESOLV_CONF, { mode: 0o644 });
      this.resolverFiles = this.stepResolverFiles();
      this.cgroups = await detectCgroups();
      // A cgroup whose workspace still exists may belong to a step another worker is starting.
      await this.cgroups.sweep((name) => {
        const uid = this.uidOfCgroup(name);
        return uid !== undefined && !existsSync(path.join(this.root, uid));
      });
      const output = await this.tryOnce();
      if (output !== undefined)
        return failed(
          `a probe step failed: ${output}${ROOTLESS && noexecAt(this.root) ? `; ${this.root} is on a file system mounted noexec, which a rootless sandbox cannot bind executable: set PLINTH_WORKER_WORK_ROOT to a directory on another` : ''}`,
        );
    } catch (error) {
      return failed(`the sandbox could not be set up: ${(error as Error).message}`);
    }
    const { limits } = this.settings;
    const enforced = this.cgroups.enforced;
    const uncapped =
      ROOTLESS && !(await quotasCappable())
        ? "; the per-user counts are not capped (/proc/sys is read-only here): one step can take all of this user's namespaces and inotify instances"
        : '';
    const report: IsolationReport = {
      mode: 'namespaces',
      requested: this.settings.mode,
      privileges: ROOTLESS ? 'rootless' : 'root',
      network,
      cgroup: this.cgroups.version,
      // Without a pids cgroup the process limit still holds: RLIMIT_NPROC counts the step's own uid
      // (rootless, the processes of its own user namespace).
      limits: { maxProcesses: limits.maxProcesses, memoryMb: enforced.memory ? limits.memoryMb : null, cpus: enforced.cpu ? limits.cpus : null },
      detail: `${ROOTLESS ? 'rootless: user, ' : ''}pid, mount, ipc, uts${network === 'host' ? '' : ', net'} namespaces; ${NETWORK_DETAIL[network]}; ${ROOTLESS ? `a user namespace of its own per step, as a uid from ${this.settings.uidBase} mapped to this worker's user` : `a uid of its own per step from ${this.settings.uidBase}`}; ${this.cgroups.detail}${uncapped}`,
    };
    return { report, template: this.template, cgroups: this.cgroups, dirs: this.systemDirs };
  }

  /** Runs PROBE_COMMAND as a real step; returns its output when it failed. */
  private async tryOnce(): Promise<string | undefined> {
    const workspace = await this.openWorkspace();
    try {
      const proc = await workspace.spawn({ command: PROBE_COMMAND, env: { PATH: SYSTEM_PATH } });
      let output = '';
      proc.child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      proc.child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      // Generous: a probe that fails only because the host was busy would leave this worker unable to run steps.
      const timer = setTimeout(() => proc.kill(), 30_000);
      const code = await new Promise<number | null>((resolve) => proc.child.on('close', (c: number | null) => resolve(c)));
      clearTimeout(timer);
      return code === 0 ? undefined : output.trim().split('\n').slice(-3).join('; ') || `exit ${code}`;
    } finally {
      await workspace.dispose();
    }
  }

  /** A claim kept from an earlier step when there is one, else a new one. */
  private async claimSlot(): Promise<Claimed> {
    return this.free.pop() ?? this.claimWithCgroup();
  }

  /** The uid of one of this root's step cgroups (`<cgroupTag>-<uid>`), else undefined. */
  private uidOfCgroup(name: string): string | undefined {
    const [tag, uid] = name.split('-');
    return tag === this.cgroupTag && /^\d+$/.test(uid ?? '') ? uid : undefined;
  }

  private async claimWithCgroup(): Promise<Claimed> {
    const { uidBase, uidCount, limits } = this.settings;
    const claim = await claimWorkspace(this.root, uidBase, uidCount);
    try {
      await Promise.all([
        writeFile(
          path.join(claim.dir, 'passwd'),
          `root:x:0:0:root:/root:/usr/sbin/nologin\nplinth:x:${claim.uid}:${claim.uid}:plinth step:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
        ),
        writeFile(path.join(claim.dir, 'group'), `root:x:0:\nplinth:x:${claim.uid}:\nnogroup:x:65534:\n`),
        // The mount table of a spawn without binds: the same for every step the claim serves.
        writeFile(path.join(claim.dir, 'fstab'), this.fstabOf(claim, [])),
      ]);
      return { claim, cgroup: await this.cgroups?.create(`${this.cgroupTag}-${claim.uid}`, limits), scratch: new Set() };
    } catch (error) {
      await removeStepFiles(claim.dir);
      throw error;
    }
  }

  private async makeWarm(): Promise<Warm> {
    const claimed = await this.claimSlot();
    try {
      return { claimed, first: await this.prestart(claimed, [], 0, { background: true }) };
    } catch (error) {
      await this.destroy(claimed, []);
      throw error;
    }
  }

  private async destroy({ claim, cgroup, network }: Claimed, processes: Iterable<SandboxedProcess>) {
    for (const proc of processes) proc.kill();
    closeNetwork(await settled(network));
    await cgroup?.destroy();
    await removeStepFiles(claim.dir);
  }

  /**
   * The claim's network under the `policy` network: made with its first sandbox and kept for every
   * later step of the claim (making one starts a helper process, about 100 ms of CPU), made again
   * when the spawner that holds it has gone.
   */
  private async networkOf(claimed: Claimed): Promise<StepNetwork | undefined> {
    if (!this.network) return undefined;
    const made = claimed.network;
    if (made) {
      const current = await settled(made);
      if (current?.network.usable) return current.network;
      if (claimed.network === made) {
        closeNetwork(current);
        claimed.network = undefined;
      }
    }
    claimed.network ??= this.makeNetwork(claimed, this.network);
    return (await claimed.network).network;
  }

  private async makeNetwork(claimed: Claimed, ports: NetworkPorts): Promise<ClaimNetwork> {
    const network = await sharedSpawner().network(ports);
    return { network, egress: serveStepEgress(network.listeners, this.settings.egress, this.log, () => claimed.narrowing) };
  }

  /** Spawns in the claim's network; one made by a spawner that has exited since is made again, once. */
  private async spawnIn(claimed: Claimed, spec: Omit<SpawnSpec, 'network'>): Promise<SpawnedProcess> {
    try {
      return await sharedSpawner().spawn({ ...spec, network: await this.networkOf(claimed) });
    } catch (error) {
      if (!(error instanceof NetworkLostError)) throw error;
      return sharedSpawner().spawn({ ...spec, network: await this.networkOf(claimed) });
    }
  }

  /**
   * recycle ends a step's sandbox and keeps its claim for the next step, once nothing of the step is
   * left: every process exited (the PID namespace's init reaps them all before its launcher exits),
   * the cgroup is empty, the workspace emptied. Anything short of that, and the claim is destroyed
   * instead: a uid serves another step only with no process and no file of the last one left.
   */
  private async recycle(claimed: Claimed, processes: Iterable<SandboxedProcess>) {
    const procs = [...processes];
    for (const proc of procs) proc.kill();
    const keep = (await exitedWithin(procs, 5_000)) && !this.closed && this.free.length < this.maxFree;
    try {
      if (keep && ((await claimed.cgroup?.isEmpty()) ?? true)) {
        await resetWorkspace(claimed.claim, claimed.scratch);
        claimed.scratch.clear();
        (await settled(claimed.network))?.egress.endStep();
        this.free.push(claimed);
        return;
      }
    } catch {
      // Not emptied: destroyed below.
    }
    await this.destroy(claimed, procs);
  }

  private async openWorkspace(narrowing?: AllowList): Promise<StepWorkspace> {
    const warm = this.pool.take();
    const claimed = warm?.claimed ?? (await this.claimSlot());
    if (narrowing && this.settings.network === 'host')
      this.log.warn("a step's execution environment narrows its egress, which PLINTH_SANDBOX_NETWORK=host cannot enforce: the step reaches what the host does");
    // Before any process of the step runs; the claim's network reads it at each connection.
    claimed.narrowing = narrowing;
    return this.workspaceOf(claimed, warm?.first);
  }

  /** A workspace whose first spawn without binds takes `spare` (a sandbox already built); every other spawn builds its own. */
  private workspaceOf(claimed: Claimed, spare?: Prestarted): StepWorkspace {
    const running = new Set<SandboxedProcess>();
    // A spawn still being started when the workspace is disposed: its process is waited for, then ended.
    const starting = new Set<Promise<unknown>>();
    const track = (proc: SandboxedProcess) => {
      running.add(proc);
      proc.child.once('exit', () => running.delete(proc));
      return proc;
    };
    if (spare) track(spare.proc);
    let spawns = 0;
    const disk = guardDisk(this.settings.limits, { dir: claimed.claim.workspace, inOwnUserNamespace: ROOTLESS, procsFiles: claimed.cgroup?.procsFiles }, () => {
      for (const proc of running) proc.kill();
    });
    return {
      uid: claimed.claim.uid,
      get diskExceeded() {
        return disk.overrun;
      },
      spawn: async (spec) => {
        const cwd = relativeWorkingDirectory(spec.workingDirectory);
        const binds = checkBinds(spec.binds);
        let next = spare && binds.length === 0 && isRunning(spare.proc) ? spare : undefined;
        if (spare && !next) void retire(spare.proc);
        spare = undefined;
        if (!next) {
          const started = this.prestart(claimed, binds, ++spawns);
          starting.add(started);
          next = await started.finally(() => starting.delete(started));
        }
        track(next.proc);
        if (disk.overrun) next.proc.kill();
        else next.begin(stepScript({ HOME: '/workspace', ...this.proxyEnv, ...spec.env }, spec.command, cwd));
        return next.proc;
      },
      pathOf: insideBinds,
      dispose: async () => {
        disk.stop();
        if (spare) await retire(spare.proc);
        await Promise.allSettled(starting);
        await this.recycle(claimed, running);
      },
    };
  }

  private fstabOf(claim: ClaimedWorkspace, binds: CheckedBind[], bindPoints?: string): string {
    const etcFiles = [
      { source: path.join(claim.dir, 'passwd'), name: 'passwd' },
      { source: path.join(claim.dir, 'group'), name: 'group' },
      ...this.resolverFiles,
    ];
    return stepFstab({
      template: this.template,
      root: claim.mountPoint,
      systemDirs: this.systemDirs,
      etcFiles,
      workspace: claim.workspace,
      tmpMb: this.settings.limits.memoryMb,
      binds,
      bindPoints,
    });
  }

  /**
   * prestart builds a sandbox up to the point where it waits for its step (SANDBOX_INIT, step 4): the
   * namespaces, the mounts, the pivot, the step's shell waiting for its script. `begin` writes that
   * script (the step's variables, working directory and command) on fd 3, which starts the step.
   */
  private async prestart(claimed: Claimed, binds: CheckedBind[], n: number, { background = false } = {}): Promise<Prestarted> {
    const { claim, cgroup } = claimed;
    const { limits, network } = this.settings;
    let fstab = path.join(claim.dir, 'fstab');
    if (binds.length) {
      // Binds are this spawn's own: its table and mount points go when the step does (scratch).
      fstab = path.join(claim.dir, `fstab-${n}`);
      const bindPoints = path.join(claim.dir, `plinth-${n}`);
      claimed.scratch.add(`fstab-${n}`).add(`plinth-${n}`);
      makeBindPoints(bindPoints, binds);
      writeFileSync(fstab, this.fstabOf(claim, binds, bindPoints));
    }
    const namespaces = [
      ...(ROOTLESS ? ['--user', '--map-root-user'] : []),
      '--pid',
      '--fork',
      '--kill-child',
      '--mount',
      '--ipc',
      '--uts',
      ...(network === 'none' ? ['--net'] : []),
    ];
    const sandbox = [fstab, claim.mountPoint, String(claim.uid), String(limits.maxProcesses)];
    const procsFiles = cgroup?.procsFiles ?? [];
    const loopback = network === 'none' ? 'up' : '';
    const launch = {
      file: 'unshare',
      args: [
        ...namespaces,
        'sh',
        '-c',
        SANDBOX_INIT,
        'plinth-init',
        ...sandbox,
        procsFiles.join(' '),
        loopback,
        ROOTLESS ? 'rootless' : '',
        ...(ROOTLESS ? quotaArguments : []),
      ],
    };
    // Built ahead, its setup yields the CPU to steps running now (the spawner lowers its launcher as
    // soon as it runs; restoreNice sets back whatever it forked); its step gets the normal priority back.
    const nice = background && canRenice ? BUILD_AHEAD_NICE : undefined;
    const proc = await this.spawnIn(claimed, { ...launch, env: { PATH: SYSTEM_PATH }, cwd: claim.dir, fd3: true, nice });
    return {
      proc,
      begin: (script) => {
        if (nice !== undefined) restoreNice(proc.child.pid!);
        // The step's shell is waiting for this: writing it is what starts the step.
        proc.handScript(script);
      },
    };
  }
}

interface Claimed {
  claim: ClaimedWorkspace;
  cgroup: StepCgroup | undefined;
  /** Files of the claim's directory made for one step (spawns with binds), removed before the next. */
  scratch: Set<string>;
  /**
   * Under the `policy` network, the network namespace its steps run in, one step after another. No
   * state of a step outlives it there: the step's uid has no capability in the namespace (it cannot
   * change an address, a route or a setting), and the claim is kept for the next step only once every
   * process of the step has exited, which closes every socket it had.
   */
  network?: Promise<ClaimNetwork>;
  /** The current step's egress narrowing (OpenOptions). */
  narrowing?: AllowList;
}

interface ClaimNetwork {
  network: StepNetwork;
  egress: ServedEgress;
}

/** The claim's network once made; undefined when none is, or making it failed (it is made again). */
function settled(network: Promise<ClaimNetwork> | undefined): Promise<ClaimNetwork | undefined> {
  return network ? network.catch(() => undefined) : Promise.resolve(undefined);
}

function closeNetwork(net: ClaimNetwork | undefined) {
  net?.egress.close();
  net?.network.release();
}

interface Prestarted {
  proc: SpawnedProcess;
  /** Hands the sandbox its step: the script its waiting shell runs. */
  begin(script: string): void;
}

interface Warm {
  claimed: Claimed;
  first: Prestarted;
}

/**
 * A sandbox built ahead (the warm pool) is built at this nice level: its processes (the launcher, its
 * init and, with the shell init, `mount`, `pivot_root` and `umount`) then run when steps leave the CPU
 * idle, not between a step's exit and its outcome's commit. `begin` sets the init back to 0 before the
 * step starts, so every process of a step runs at the normal priority. It needs /proc's `children`
 * list (to find the init under its launcher), and root (a normal user cannot raise a priority back);
 * without either, nothing is lowered.
 */
const BUILD_AHEAD_NICE = 10;
/** See replenish(): how long a worker's steps must leave it quiet before the pool refills, and the most a refill waits. */
const REFILL_QUIET_MS = 30;
const REFILL_MAX_WAIT_MS = 250;
const canRenice = !ROOTLESS && existsSync(`/proc/${process.pid}/task/${process.pid}/children`);

function setNice(pid: number | undefined, nice: number): boolean {
  if (!pid) return false;
  try {
    os.setPriority(pid, nice);
    return true;
  } catch {
    return false;
  }
}

/**
 * restoreNice sets the sandbox's processes back to 0, parents before children (the launcher, its init,
 * the init's guard and the step namespace's pid 1, then that one's child: the step's waiting shell):
 * a process forked after its parent was set
 * inherits 0, one forked before is in its parent's `children` list. So every process of the step, its
 * shell and whatever that starts once its script arrives, runs at 0.
 */
function restoreNice(launcherPid: number) {
  const pending = [launcherPid];
  for (let depth = 0; depth < 4 && pending.length; depth++) {
    for (const pid of pending.splice(0)) {
      setNice(pid, 0);
      pending.push(...childrenOf(pid));
    }
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return []; // It exited.
  }
}

/** A step's resolver under the `policy` network: the worker's relay on the step's own loopback (egress.ts). */
const STEP_RESOLV_CONF = 'nameserver 127.0.0.1\noptions timeout:2 attempts:3\n';

const NETWORK_DETAIL = {
  policy: "a network of its own whose only way out is the worker's egress proxy",
  none: 'no network',
  host: "the host's network (PLINTH_SANDBOX_NETWORK=host)",
} as const;

/** The proxy's port, and the loopback ports forwarded to the host's: the proxy moves off a forwarded one. */
function stepNetwork(forwardPorts: number[]) {
  let proxyPort = PROXY_PORT;
  while (forwardPorts.includes(proxyPort)) proxyPort++;
  return { proxyPort, forwardPorts };
}

/**
 * Every spelling clients read. No NO_PROXY: a client that proxies loopback too (curl, git) reaches an
 * allowlisted service on the host's loopback through the proxy; one that never does (Go, so OpenTofu)
 * finds the state backend forwarded on its own loopback.
 */
function proxyVariables(port: number): Record<string, string> {
  const proxy = `http://127.0.0.1:${port}`;
  return { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy };
}

/**
 * retire ends a sandbox that never got its step: end-of-file on its script makes its waiting shell
 * exit having run nothing (and on its stdin makes the guard kill whatever is left), so its init exits
 * and its launcher reaps it (a SIGKILL to the group would leave the init a zombie for the host's init to reap).
 */
async function retire(proc: SpawnedProcess): Promise<void> {
  if (!isRunning(proc)) return;
  proc.release();
  if (!(await exitedWithin([proc], 5_000))) {
    proc.kill();
    await once(proc.child, 'exit');
  }
}

/** Whether every one of `procs` has exited (their launcher reaped, so their whole namespace is gone) within `ms`. */
async function exitedWithin(procs: SandboxedProcess[], ms: number): Promise<boolean> {
  const exits = procs.filter(isRunning).map((p) => once(p.child, 'exit'));
  let timer: NodeJS.Timeout | undefined;
  const gone = await Promise.race([Promise.all(exits).then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))]);
  clearTimeout(timer);
  return gone;
}

function isRunning(proc: SandboxedProcess): boolean {
  return proc.child.pid !== undefined && proc.child.exitCode === null && proc.child.signalCode === null;
}

/** The mount points of binds, made on the host (the step's root is read-only): a directory or an empty file each. */
function makeBindPoints(dir: string, binds: CheckedBind[]) {
  if (binds.length === 0) return;
  mkdirSync(dir, { mode: 0o755 });
  for (const bind of binds) {
    const point = path.join(dir, bind.target.slice(BIND_ROOT.length));
    if (bind.kind === 'dir') mkdirSync(point, { recursive: true, mode: 0o755 });
    else {
      mkdirSync(path.dirname(point), { recursive: true, mode: 0o755 });
      writeFileSync(point, '', { mode: 0o644 });
    }
  }
}
