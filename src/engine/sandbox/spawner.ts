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
  if (parts.some((part) => part.includes('\0'))) throw new Error("a spawned process's file, arguments, environment or directory cannot hold a NUL byte");
  return Buffer.from(parts.join('\0')).toString('hex');
}

/** What the spawner starts: always in a process group of its own, its stdin the guard's pipe, written only to stop the step. */
export interface SpawnSpec {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Opens a pipe on the child's fd 3: how a namespaced sandbox gets its step's script (handScript). */
  fd3?: boolean;
  /** A nice level the spawner sets as soon as the child runs: a sandbox built ahead yields to running steps. */
  nice?: number;
  /** Starts the child inside this network namespace (made by `Spawner.network`, still `usable`). */
  network?: StepNetwork;
}

/** Where a step's network listens inside its namespace: the proxy on `proxyPort`, DNS on UDP 53, one for each of `forwardPorts`. */
export interface NetworkPorts {
  proxyPort: number;
  forwardPorts: number[];
}

/**
 * A network namespace of its own, with loopback up and the listen sockets in it that the worker serves
 * (egress.ts). The spawner holds the namespace until `release`; should the spawner die, it is no longer
 * `usable` (a process cannot be started in it) and must be released and made again.
 */
export interface StepNetwork {
  readonly listeners: StepListeners;
  readonly usable: boolean;
  /** Closes its listen sockets and lets the namespace go. */
  release(): void;
}

/** A spawn named a network whose spawner is gone: make the network again. */
export class NetworkLostError extends Error {
  constructor() {
    super("the step's network was made by a spawner that has exited");
  }
}

/** A process the spawner started; signals reach its group only while it runs. */
export interface SpawnedProcess extends SandboxedProcess {
  /** Writes `script` on fd 3 and closes it: a namespaced sandbox's waiting shell runs it. */
  handScript(script: string): void;
  /** Closes fd 3 and stdin having written nothing: a waiting shell runs nothing, the guard kills what is left. */
  release(): void;
}

type FromSpawner =
  | { op: 'stdout' | 'stderr'; id: number }
  | { op: 'proxy' | 'dns'; id: number }
  | { op: 'tunnel'; id: number; port: number }
  | { op: 'network'; id: number }
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
  started: (proc: SpawnedProcess) => void;
  failed: (error: Error) => void;
  /** The helper that starts it: only that helper's death ends it. */
  helper: ChildProcess;
}

/** A network being made: its listen sockets as they arrive. */
interface PendingNetwork {
  proxy?: Server;
  dns?: UdpSocket;
  tunnels: Array<{ server: Server; port: number }>;
  /** `network` (all made) came before every listener did (a server is told once it listens): kept until they are in. */
  made: boolean;
  missing: number;
  ready: (network: StepNetwork) => void;
  failed: (error: Error) => void;
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
  private readonly making = new Map<number, PendingNetwork>();
  /** Starts `o` (a process group of its own, stdin the guard's pipe); resolves once it runs, rejects when it could not start. */
  spawn(o: SpawnSpec): Promise<SpawnedProcess> {
    return this.onLiveHelper(() => this.spawnOnce(o));
  }

  /** Makes a network namespace with listen sockets on `ports`; rejects when it could not be made. */
  network(ports: NetworkPorts): Promise<StepNetwork> {
    return this.onLiveHelper(() => this.networkOnce(ports));
  }

  /** Runs an order; one sent to a helper that had died unnoticed is sent again, once, to a new one. */
  private async onLiveHelper<T>(order: () => Promise<T>): Promise<T> {
    try {
      return await order();
    } catch (error) {
      if (error instanceof HelperLostError) return order();
      throw error;
    }
  }

  private networkOnce(ports: NetworkPorts): Promise<StepNetwork> {
    const helper = this.helperProcess();
    const id = this.nextId++;
    return new Promise((ready, failed) => {
      this.making.set(id, { tunnels: [], made: false, missing: 2 + ports.forwardPorts.length, ready, failed, helper });
      this.holdLoop();
      helper.send({ op: 'network', id, ports: [ports.proxyPort, ...ports.forwardPorts] });
    });
  }

  private spawnOnce(o: SpawnSpec): Promise<SpawnedProcess> {
    const helper = this.helperProcess();
    const id = this.nextId++;
    // Usable only while its spawner is the current one, which helperProcess() has just returned.
    if (o.network && !o.network.usable) return Promise.reject(new NetworkLostError());
    const netId = o.network ? networkIds.get(o.network) : undefined;
    const child = new RemoteChild();
    child.once('close', () => this.forget(id));
    return new Promise((started, failed) => {
      this.live.set(id, { child, started, failed, helper });
      this.holdLoop();
      try {
        const env = Object.entries(o.env).map(([name, value]) => `${name}=${value}`);
        const spec = [
          o.file,
          o.cwd,
          o.nice === undefined ? '' : String(o.nice),
          o.fd3 ? '1' : '0',
          netId === undefined ? '' : String(netId),
          String(o.args.length),
          ...o.args,
          ...env,
        ];
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
    const making = this.making.get(m.id);
    if (making) return this.onNetworkMessage(m, making, handle);
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
      case 'spawned':
        child.pid = m.pid;
        pending.started(this.remote(helper, m.id, child));
        return;
      case 'error':
        this.forget(m.id);
        pending.failed(new Error(`could not start ${m.message}`));
        return;
      case 'exit':
        child.exited(m.code, m.signal);
        return;
      default:
        closeHandle(handle);
    }
  }

  private onNetworkMessage(m: FromSpawner, making: PendingNetwork, handle: unknown) {
    if (m.op === 'error') {
      this.forgetNetwork(m.id, making);
      return making.failed(new Error(`could not start ${m.message}`));
    }
    if (m.op === 'network') making.made = true;
    else if (!handle) return;
    else if (m.op === 'proxy') making.proxy = handle as Server;
    else if (m.op === 'dns') making.dns = handle as UdpSocket;
    else if (m.op === 'tunnel') making.tunnels.push({ server: handle as Server, port: m.port });
    else return closeHandle(handle);
    if (m.op !== 'network') making.missing--;
    if (!making.made || making.missing > 0) return;
    this.making.delete(m.id);
    this.holdLoop();
    making.ready(this.madeNetwork(m.id, making));
  }

  private madeNetwork(id: number, { proxy, dns, tunnels, helper }: PendingNetwork): StepNetwork {
    const listeners: StepListeners = { proxy: proxy!, dns: dns!, tunnels };
    // Kept between steps, they must not hold the process open by themselves: a step's connections do while they last.
    for (const handle of [listeners.proxy, listeners.dns, ...tunnels.map((t) => t.server)]) handle.unref();
    let released = false;
    // Its spawner is the current one: one whose loss was told (by its exit, maybe before its channel closed) is not.
    const current = () => this.helper === helper && helper.connected;
    const network: StepNetwork = {
      listeners,
      get usable() {
        return !released && current();
      },
      release: () => {
        if (released) return;
        released = true;
        closeListeners(listeners);
        if (helper.connected) helper.send({ op: 'drop-network', id });
      },
    };
    networkIds.set(network, id);
    return network;
  }

  private forgetNetwork(id: number, making: PendingNetwork) {
    this.making.delete(id);
    this.holdLoop();
    closeListeners(making);
  }

  private forget(id: number) {
    this.live.delete(id);
    this.holdLoop();
  }

  /** The channel holds the event loop open while a process or network is being started or a process runs; idle, the helper does not. */
  private holdLoop() {
    const channel = (this.helper as unknown as { channel?: { ref(): void; unref(): void } } | undefined)?.channel;
    if (this.live.size > 0 || this.making.size > 0) channel?.ref();
    else channel?.unref();
  }

  private remote(helper: ChildProcess, id: number, child: RemoteChild): SpawnedProcess {
    const send = (message: object) => {
      if (helper.connected) helper.send({ ...message, id });
    };
    // A sandbox's guard sends INT and TERM to the step's processes (init-script.ts); only SIGKILL goes to the process group.
    const stop = (s: NodeJS.Signals) => send({ op: 'stop', signal: s });
    return {
      child,
      terminate: () => stop('SIGTERM'),
      interrupt: () => stop('SIGINT'),
      kill: () => send({ op: 'signal', signal: 'SIGKILL' }),
      handScript: (script) => send({ op: 'script', a: Buffer.from(script).toString('hex') }),
      release: () => send({ op: 'release' }),
    };
  }

  /** The helper is gone: so are the guard pipes of everything it started, whose guards kill it all. */
  private lost(helper: ChildProcess) {
    if (this.helper === helper) this.helper = undefined;
    helper.removeAllListeners('message');
    for (const [id, { child, failed, helper: startedBy }] of this.live) {
      if (startedBy !== helper) continue;
      if (child.pid === undefined) {
        this.forget(id);
        failed(new HelperLostError());
      } else child.exited(null, 'SIGKILL');
    }
    for (const [id, making] of this.making) {
      if (making.helper !== helper) continue;
      this.forgetNetwork(id, making);
      making.failed(new HelperLostError());
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

/** Closes a network's listen sockets: they hold its namespace. */
function closeListeners(listeners: { proxy?: Server; dns?: UdpSocket; tunnels: ReadonlyArray<{ server: Server }> }) {
  for (const handle of [listeners.proxy, listeners.dns, ...listeners.tunnels.map((t) => t.server)]) closeHandle(handle);
}

/** A network's id in the spawner that holds it, kept out of its public face. */
const networkIds = new WeakMap<StepNetwork, number>();

let shared: Spawner | undefined;

/** The spawner of this process: one helper serves every sandbox of it (tests run many workers in one process). */
export function sharedSpawner(): Spawner {
  shared ??= new Spawner();
  return shared;
}
