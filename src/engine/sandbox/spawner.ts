import { fork, type ChildProcess } from 'node:child_process';
import type { Socket as UdpSocket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import type { Server, Socket } from 'node:net';
import type { StepListeners } from './egress.ts';
import { fileURLToPath } from 'node:url';
import type { SandboxedProcess, StepChild } from './sandbox.ts';

const CHILD_SCRIPT = fileURLToPath(new URL('./spawner-child.mjs', import.meta.url));

/** The command name of a worker's spawner in /proc (it is a Node process). */
export const SPAWNER_COMM = 'node';

/** The spawner's orders carry their strings as one hexadecimal payload, NUL-separated: no string of them can be mistaken for another field. */
function payload(parts: string[]): string {
  if (parts.some((part) => part.includes('\0'))) throw new Error('a spawned process\'s file, arguments, environment or directory cannot hold a NUL byte');
  return Buffer.from(parts.join('\0')).toString('hex');
}

/** What the spawner starts: always in a process group of its own, its stdin a pipe nobody writes (the guard's). */
export interface SpawnSpec {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Opens a pipe on the child's fd 3: how a namespaced sandbox gets its step's script (handScript). */
  fd3?: boolean;
  /** A nice level the spawner sets as soon as the child runs: a sandbox built ahead yields to running steps. */
  nice?: number;
  /**
   * Starts the child in a network namespace of its own, with loopback up and listen sockets on it for
   * the worker (egress.ts): the proxy on `proxyPort`, DNS on UDP 53, and one for each of `forwardPorts`.
   */
  network?: { proxyPort: number; forwardPorts: number[] };
}

/** A process the spawner started; signals reach its group only while it runs. */
export interface SpawnedProcess extends SandboxedProcess {
  /** Writes `script` on fd 3 and closes it: a namespaced sandbox's waiting shell runs it. */
  handScript(script: string): void;
  /** Closes fd 3 and stdin having written nothing: a waiting shell runs nothing, the guard kills what is left. */
  release(): void;
  /** With `network`: the listen sockets in the child's namespace, the worker's to serve and close. */
  readonly listeners?: StepListeners;
}

type FromSpawner =
  | { op: 'stdout' | 'stderr'; id: number }
  | { op: 'proxy' | 'dns'; id: number }
  | { op: 'tunnel'; id: number; port: number }
  | { op: 'spawned'; id: number; pid: number }
  | { op: 'error'; id: number; message: string }
  | { op: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null };

/**
 * A process the spawner started, as its worker sees it: `exit` and `close` as a ChildProcess emits
 * them (`close` once it exited and both pipes closed), stdout and stderr the child's own pipes.
 */
export class RemoteChild extends EventEmitter implements StepChild {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  stdout: Socket | null = null;
  stderr: Socket | null = null;
  private openParts = 3;

  adopt(stream: 'stdout' | 'stderr', socket: Socket) {
    if (this.exitCode !== null || this.signalCode !== null) {
      // Handed over after its exit was told: that exit already counted it closed.
      socket.destroy();
      return;
    }
    this[stream] = socket;
    socket.once('close', () => this.partClosed());
  }

  /**
   * Known at once (`exitCode`), told on the next turn of the event loop: the message may arrive in the
   * same read as `spawned`, before the runner awaiting the spawn has added its listeners.
   */
  exited(code: number | null, signal: NodeJS.Signals | null) {
    if (this.exitCode !== null || this.signalCode !== null) return;
    this.exitCode = code;
    this.signalCode = signal;
    // Every handed-over pipe came before the exit on the ordered channel; one that never came (the
    // worker could not take it: out of descriptors) will not, and must not hold `close` back.
    const missing = [this.stdout, this.stderr].filter((stream) => stream === null).length;
    setImmediate(() => {
      this.emit('exit', code, signal);
      // As a ChildProcess does: a pipe nobody reads is drained, so that `close` comes.
      for (const stream of [this.stdout, this.stderr]) if (stream?.readableFlowing === null) stream.resume();
      for (let i = 0; i < missing; i++) this.partClosed();
      this.partClosed();
    });
  }

  private partClosed() {
    if (--this.openParts === 0) this.emit('close', this.exitCode, this.signalCode);
  }
}

class HelperLostError extends Error {
  constructor() {
    super('the spawner exited before the process started');
  }
}

interface Pending {
  child: RemoteChild;
  /** With a network: its listen sockets as they arrive, and how many are still to come. */
  listeners?: { proxy?: Server; dns?: UdpSocket; tunnels: Array<{ server: Server; port: number }>; missing: number };
  /** `spawned` came before every listener did (a server is told once it listens): the pid, kept until they are in. */
  spawnedPid?: number;
  started: (proc: SpawnedProcess) => void;
  failed: (error: Error) => void;
  /** The helper that starts it: only that helper's death ends it. */
  helper: ChildProcess;
}

/**
 * Spawner starts a worker's sandbox processes from a small helper process instead of the worker
 * itself: a fork's cost grows with the forking process's memory, and it blocks that process until the
 * child has exec'd. The helper (spawner-child.mjs) exits when its worker does, and its children's guards then end every step, as if the worker had held
 * their pipes. Should the helper die, the processes it started are reported killed and the next spawn
 * starts a new one.
 */
export class Spawner {
  private helper: ChildProcess | undefined;
  private nextId = 1;
  private readonly live = new Map<number, Pending>();
  /** Starts `o` (a process group of its own, stdin a pipe nobody writes); resolves once it runs, rejects when it could not start. */
  async spawn(o: SpawnSpec): Promise<SpawnedProcess> {
    try {
      return await this.spawnOnce(o);
    } catch (error) {
      // Sent to a helper that had died unnoticed: a new one starts it.
      if (error instanceof HelperLostError) return this.spawnOnce(o);
      throw error;
    }
  }

  private spawnOnce(o: SpawnSpec): Promise<SpawnedProcess> {
    const helper = this.helperProcess();
    const id = this.nextId++;
    const child = new RemoteChild();
    child.once('close', () => this.forget(id));
    return new Promise((started, failed) => {
      const listeners = o.network ? { tunnels: [], missing: 2 + o.network.forwardPorts.length } : undefined;
      this.live.set(id, { child, started, failed, helper, listeners });
      this.holdLoop();
      try {
        const env = Object.entries(o.env).map(([name, value]) => `${name}=${value}`);
        const ports = o.network ? [o.network.proxyPort, ...o.network.forwardPorts].join(',') : '';
        const spec = [o.file, o.cwd, o.nice === undefined ? '' : String(o.nice), o.fd3 ? '1' : '0', ports, String(o.args.length), ...o.args, ...env];
        helper.send({ op: 'spawn', id, a: payload(spec) });
      } catch (error) {
        this.forget(id);
        failed(error as Error);
      }
    });
  }

  /** Stops the helper; the sandboxes it started lose their guard pipe, and end. */
  close(): void {
    this.helper?.disconnect();
    this.helper = undefined;
  }

  private helperProcess(): ChildProcess {
    if (this.helper?.connected) return this.helper;
    // Its own group, so a terminal's Ctrl-C reaches only the worker; no flags of the worker's (tsx), no environment.
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    const helper = fork(CHILD_SCRIPT, [], { execArgv: [], env, detached: true, stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    helper.on('message', (m: FromSpawner, handle?: Socket | Server | UdpSocket) => this.onMessage(helper, m, handle));
    // Its channel closing is how its death is known first (its exit status may never be reaped while nothing holds the loop).
    helper.once('disconnect', () => this.lost(helper));
    helper.once('exit', () => this.lost(helper));
    helper.on('error', () => this.lost(helper));
    // It keeps the event loop alive only while a process it started runs (holdLoop), as a child would.
    helper.unref();
    this.helper = helper;
    this.holdLoop();
    return helper;
  }

  private onMessage(helper: ChildProcess, m: FromSpawner, handle?: Socket | Server | UdpSocket) {
    const pending = this.live.get(m.id);
    if (!pending) {
      closeHandle(handle);
      return;
    }
    const { child } = pending;
    switch (m.op) {
      case 'stdout':
      case 'stderr':
        if (handle) child.adopt(m.op, handle as Socket);
        return;
      case 'proxy':
      case 'dns':
      case 'tunnel':
        this.adoptListener(helper, m, pending, handle);
        return;
      case 'spawned':
        pending.spawnedPid = m.pid;
        this.startedIfReady(helper, m.id, pending);
        return;
      case 'error':
        this.forget(m.id);
        closeListeners(pending.listeners);
        pending.failed(new Error(`could not start ${m.message}`));
        return;
      case 'exit':
        child.exited(m.code, m.signal);
        return;
    }
  }

  private adoptListener(helper: ChildProcess, m: FromSpawner & { op: 'proxy' | 'dns' | 'tunnel' }, pending: Pending, handle: unknown) {
    const listeners = pending.listeners;
    if (!listeners || !handle) return closeHandle(handle);
    if (m.op === 'proxy') listeners.proxy = handle as Server;
    else if (m.op === 'dns') listeners.dns = handle as UdpSocket;
    else if (m.op === 'tunnel') listeners.tunnels.push({ server: handle as Server, port: m.port });
    listeners.missing--;
    this.startedIfReady(helper, m.id, pending);
  }

  private startedIfReady(helper: ChildProcess, id: number, pending: Pending) {
    if (pending.spawnedPid === undefined || (pending.listeners?.missing ?? 0) > 0) return;
    pending.child.pid = pending.spawnedPid;
    const { proxy, dns, tunnels } = pending.listeners ?? {};
    pending.started(this.remote(helper, id, pending.child, proxy && dns ? { proxy, dns, tunnels: tunnels ?? [] } : undefined));
  }

  private forget(id: number) {
    this.live.delete(id);
    this.holdLoop();
  }

  /** The channel holds the event loop open while a process is being started or runs; idle, the helper does not. */
  private holdLoop() {
    const channel = (this.helper as unknown as { channel?: { ref(): void; unref(): void } } | undefined)?.channel;
    if (this.live.size > 0) channel?.ref();
    else channel?.unref();
  }

  private remote(helper: ChildProcess, id: number, child: RemoteChild, listeners: StepListeners | undefined): SpawnedProcess {
    const send = (message: object) => {
      if (helper.connected) helper.send({ ...message, id });
    };
    const signal = (s: NodeJS.Signals) => send({ op: 'signal', signal: s });
    return {
      child,
      terminate: () => signal('SIGTERM'),
      interrupt: () => signal('SIGINT'),
      kill: () => signal('SIGKILL'),
      handScript: (script) => send({ op: 'script', a: Buffer.from(script).toString('hex') }),
      release: () => send({ op: 'release' }),
      listeners,
    };
  }

  /** The helper is gone: so are the guard pipes of everything it started, whose guards kill it all. */
  private lost(helper: ChildProcess) {
    if (this.helper === helper) this.helper = undefined;
    helper.removeAllListeners('message');
    for (const [id, { child, failed, helper: startedBy, listeners }] of this.live) {
      if (startedBy !== helper) continue;
      if (child.pid === undefined) {
        closeListeners(listeners);
        this.forget(id);
        failed(new HelperLostError());
      } else child.exited(null, 'SIGKILL');
    }
  }
}

function closeHandle(handle: unknown) {
  try {
    (handle as { close?: () => void } | undefined)?.close?.();
  } catch {
    // Closed already.
  }
}

/** Closes the listen sockets of a step that will not run: they hold its network namespace. */
function closeListeners(listeners: Pending['listeners']) {
  for (const handle of [listeners?.proxy, listeners?.dns, ...(listeners?.tunnels ?? []).map((t) => t.server)]) closeHandle(handle);
}

let shared: Spawner | undefined;

/** The spawner of this process: one helper serves every sandbox of it (tests run many workers in one process). */
export function sharedSpawner(): Spawner {
  shared ??= new Spawner();
  return shared;
}
