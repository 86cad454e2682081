// The worker's spawner (spawner.ts): a small process that starts the sandboxes' processes for its worker. A fork copies the
// page tables of the process that forks: from the worker (over 100 MB) each spawn cost about 2.5 ms of
// CPU and blocked the worker's event loop until the child had exec'd (5 ms at p50 on a busy 2-core
// machine); from this process, a fraction of that, and the worker goes on.
//
// Plain JavaScript, Node's own modules only: it loads nothing else, so it stays small. It takes orders
// only from its worker, over the IPC channel; it starts what it is told with the environment it is
// told, as the worker would have. It hands each child's stdout and stderr to the worker (the pipes
// themselves, over the channel) and keeps its stdin and fd 3: it writes the step's script on fd 3 when
// told, and writes stdin only the lines that stop a step (INT, TERM). When the worker goes (even by SIGKILL) the channel closes and this
// process exits, which closes every stdin it held: each sandbox's guard then kills its step, as it did
// when the worker held those pipes itself.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

const NETWORK_HELPER = fileURLToPath(new URL('./stepnet-helper.mjs', import.meta.url));
const NETWORK_SETUP_MS = 30_000;
const SYSTEM_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
// Run by a normal user, a network namespace needs a user namespace of its own, which then owns it:
// its sandboxes enter both. The same test as sandbox.ts's ROOTLESS (this file imports no TypeScript).
const ROOTLESS = process.getuid() !== 0;

/** The IPC channel to the worker (spawner.ts forks this process with it as fd 3). */
const CHANNEL_FD = 3;
const O_CLOEXEC = 0o2000000;

/**
 * Closes the descriptors this process inherited without close-on-exec (a pipe the shell that started
 * the service left open), but the channel and the standard ones: every process this one starts would
 * inherit them, a step included. Node's own descriptors are all close-on-exec.
 */
function closeInheritedDescriptors() {
  for (const name of readdirSync('/proc/self/fd')) {
    const fd = Number(name);
    if (fd <= CHANNEL_FD) continue;
    try {
      const flags = /^flags:\s+([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      if (flags !== undefined && (parseInt(flags, 8) & O_CLOEXEC) === 0) closeSync(fd);
    } catch {
      // Closed already (the listing's own descriptor).
    }
  }
}
closeInheritedDescriptors();

/** Children by the worker's id for them, until they exit. */
const children = new Map();

// Only the worker ends it (by closing the channel): a terminal's Ctrl-C reaches the worker, which drains.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => {});
process.on('disconnect', () => process.exit(0));
// And should 'disconnect' never come: Node holds it back while a handle it sent awaits the other side's
// acknowledgement, which a worker killed at that moment never sends, and the listen sockets this process
// was handing over would keep it alive.
setInterval(() => process.connected || process.exit(0), 1_000).unref();

process.on('message', (m) => {
  const child = children.get(m.id);
  switch (m.op) {
    case 'spawn':
      return begin(m.id, spawnSpec(Buffer.from(m.a, 'hex').toString().split('\0')));
    case 'network':
      return makeNetwork(m.id, m.ports.map(String)).catch((error) => {
        dropNetwork(m.id);
        process.send({ op: 'error', id: m.id, message: `the step's network: ${error.message}` });
      });
    case 'drop-network':
      return dropNetwork(m.id);
    case 'script':
      return child?.stdio[3]?.end(Buffer.from(m.a, 'hex'));
    case 'release':
      child?.stdio[3]?.end();
      return child?.stdin.end();
    case 'signal':
      // Only while it runs: once reaped, its pid (and group id) may be another process's.
      if (child && child.exitCode === null && child.signalCode === null) signalGroup(child.pid, m.signal);
      return;
    case 'stop':
      // A sandbox's guard reads its stdin: the line asks it to send the signal, once, to every process of the step.
      if (child && !child.stdin.writableEnded) child.stdin.write(`${m.signal === 'SIGINT' ? 'INT' : 'TERM'}\n`);
      return;
  }
});

/** A spawn's payload, as spawner.ts writes it: file, cwd, nice, fd3, network id, argc, the arguments, the environment's NAME=value pairs. */
function spawnSpec([file, cwd, nice, fd3, net, argc, ...rest]) {
  const args = rest.slice(0, Number(argc));
  const env = Object.fromEntries(rest.slice(args.length).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  return { file, args, env, cwd, fd3: fd3 === '1', nice: nice === '' ? undefined : Number(nice), net: net === '' ? undefined : Number(net) };
}

/**
 * Network namespaces by the worker's id for them, each held open by a descriptor (`net`, and rootless
 * `user`, the user namespace that owns it): a claim's steps run in its namespace one after another
 * (namespaces.ts), so it is made once per claim, not per step.
 */
const networks = new Map();

/**
 * A network namespace of its own, made by the helper (stepnet-helper.mjs) with the listen sockets the
 * worker serves in it: handed to the worker, then `network` says it is ready. This process keeps the
 * namespace by a descriptor, so it cannot be another's whatever happens to the helper.
 */
async function makeNetwork(id, ports) {
  const owner = ROOTLESS ? ['--user', '--map-root-user'] : [];
  const helper = spawn('unshare', [...owner, '--net', '--', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath, NETWORK_HELPER, ...ports], {
    env: { PATH: SYSTEM_PATH },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  helper.stderr.on('data', (d) => (stderr = (stderr + d).slice(-500)));
  const handed = [];
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not set up within ${NETWORK_SETUP_MS / 1000} s`)), NETWORK_SETUP_MS);
      // A proxy, DNS, and a forward for each port after the proxy's. Counted, not awaited by a last
      // message: a server handed over is told once it listens here, after messages sent behind it.
      const expected = ports.length + 1;
      helper.on('message', (m, handle) => {
        if (handle) handed.push([m, handle]);
        if (handed.length === expected) {
          clearTimeout(timer);
          resolve();
        }
      });
      const fail = (error) => {
        clearTimeout(timer);
        reject(error);
      };
      helper.once('error', fail);
      helper.once('exit', (code) => fail(new Error(stderr.trim() || `its helper exited with ${code}`)));
    });
    const ns = { net: openSync(`/proc/${helper.pid}/ns/net`, 'r'), user: ROOTLESS ? openSync(`/proc/${helper.pid}/ns/user`, 'r') : undefined };
    networks.set(id, ns);
    for (const [m, handle] of handed)
      await new Promise((resolve, reject) => process.send({ op: m.op, id, port: m.port }, handle, (error) => (error ? reject(error) : resolve())));
    process.send({ op: 'network', id });
  } finally {
    // This process keeps none of them: they are the worker's now, or of nobody.
    for (const [, handle] of handed) closeQuietly(handle);
    if (helper.connected) helper.disconnect();
    helper.kill('SIGKILL');
  }
}

function dropNetwork(id) {
  const ns = networks.get(id);
  networks.delete(id);
  if (ns === undefined) return;
  closeSync(ns.net);
  if (ns.user !== undefined) closeSync(ns.user);
}

/**
 * Starts the process, inside its network namespace when it names one: `nsenter` enters it by a
 * descriptor (fd 5), rootless after the user namespace that owns it (fd 6), keeping its uid there (0).
 */
function begin(id, spec) {
  if (spec.net === undefined) return start(id, spec);
  const ns = networks.get(spec.net);
  if (ns === undefined) return process.send({ op: 'error', id, message: "the step's network: it is gone" });
  const user = ns.user === undefined ? [] : ['--user=/proc/self/fd/6', '--preserve-credentials'];
  start(id, { ...spec, file: 'nsenter', args: [...user, '--net=/proc/self/fd/5', '--', spec.file, ...spec.args], netns: ns });
}

function closeQuietly(handle) {
  try {
    handle.close();
  } catch {
    // Closed already.
  }
}

function start(id, { file, args, env, cwd, fd3, nice, netns }) {
  let child;
  try {
    const stdio = fd3 ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'];
    if (netns !== undefined) stdio.push(...(fd3 ? [] : ['ignore']), 'ignore', netns.net, ...(netns.user === undefined ? [] : [netns.user]));
    child = spawn(file, args, { cwd, env, detached: true, stdio });
  } catch (error) {
    return process.send({ op: 'error', id, message: error.message });
  }
  if (child.pid === undefined) {
    return child.once('error', (error) => process.send({ op: 'error', id, message: error.message }));
  }
  // Node starts reading a child's pipes as soon as it makes them (in the next poll): stopped here, in the
  // same tick, so that every byte is left in the pipe for the worker, which reads it once handed over.
  for (const stream of [child.stdout, child.stderr]) stopReading(stream);
  if (nice !== undefined) lower(child.pid, nice);
  // A process that ends before reading them closes these pipes: not an error.
  child.stdin.on('error', () => {});
  child.stdio[3]?.on('error', () => {});
  children.set(id, child);
  child.once('exit', (code, signal) => {
    children.delete(id);
    child.stdin.destroy();
    child.stdio[3]?.destroy();
    process.send({ op: 'exit', id, code, signal });
  });
  // In this order, and each message is delivered in order: the worker has both pipes when it reads `spawned`.
  process.send({ op: 'stdout', id }, child.stdout);
  process.send({ op: 'stderr', id }, child.stderr);
  process.send({ op: 'spawned', id, pid: child.pid });
}

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

/** Before it forks anything, most likely: what it forks inherits the level (the worker sets it back to 0 for the step). */
function lower(pid, nice) {
  try {
    setPriority(pid, nice);
  } catch {
    // It exited already.
  }
}

function stopReading(stream) {
  const handle = stream._handle;
  if (!handle) return;
  handle.reading = false;
  handle.readStop();
}
