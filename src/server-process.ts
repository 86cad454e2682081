// The process commands: serve, api and worker start Plinth; migrate migrates and exits.

import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, scrubSecretEnv, type Config } from './platform/config.ts';
import { chooseLogFormat, createLogger, type Logger } from './platform/logger.ts';
import { startTracing, tracingEnabled } from './platform/tracing.ts';
import type { ProcessRoles, RunningPlinth } from './server.ts';

const COMMAND_ROLES: Record<string, ProcessRoles> = {
  serve: { api: true, worker: true },
  api: { api: true, worker: false },
  worker: { api: false, worker: true },
};

/** runServerCommand runs one of the process commands (the user commands are in cli/). */
export async function runServerCommand(command: 'serve' | 'api' | 'worker' | 'migrate') {
  const config = loadConfig();
  // Tracing, when asked for, starts before the rest of Plinth is imported (pg is instrumented on import).
  const tracing = tracingEnabled() && command !== 'migrate' ? await startTracing(process.env.OTEL_SERVICE_NAME || `plinth-${command}`) : undefined;
  const tracingEndpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  // Read once (the exporter has read its headers too); from here on no child process of this one can
  // inherit them (docs/sandbox.md#secrets).
  scrubSecretEnv();
  const format = chooseLogFormat(config.logFormat, process.stdout.isTTY === true);
  const log = createLogger(config.logLevel, { format, mixin: tracing?.logFields });
  const { anchorKeyOf, openDatabase, prepareDatabase, runPlinth } = await import('./server.ts');
  if (tracing) log.info({ endpoint: tracingEndpoint }, 'tracing to OTLP');

  if (command === 'migrate') {
    const database = await openDatabase(config, log);
    try {
      const applied = await prepareDatabase(database, log, anchorKeyOf(config));
      log.info({ migrations: applied }, applied.length ? 'applied migrations' : 'database is up to date');
    } finally {
      await database.close();
    }
    return;
  }
  const roles = COMMAND_ROLES[command];
  const running = await runPlinth(config, roles, log, tracing);
  const url = listeningUrl(running);
  log.info({ command, url }, 'plinth started');
  if (format === 'pretty') process.stdout.write(banner(config, url));
  // JSON lines are written in batches; this line is what scripts wait for.
  log.flush();
  stopOnSignals(running, log);
}

/** The API's URL as it listens (PORT=0 takes a free port), for a process that serves the API. */
function listeningUrl(running: RunningPlinth): string | undefined {
  const address = running.app?.server.address();
  if (!address || typeof address === 'string') return undefined;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/** What a person who ran `npm start` needs next: where Plinth answers, the admin token, how to stop it. */
function banner(config: Config, url: string | undefined): string {
  const tokenFile = path.join(config.dataDir, 'admin-token');
  const token = config.adminToken ? 'the value of PLINTH_ADMIN_TOKEN' : existsSync(tokenFile) ? tokenFile : undefined;
  const lines = [
    url ? `Plinth is running at ${url}` : 'Plinth is running (worker)',
    ...(url ? [`  console      ${url}/ (sign in with an API key)`] : []),
    ...(token ? [`  admin token  ${token}`] : []),
    `  stop         Ctrl-C, or kill -TERM ${process.pid}`,
  ];
  return `\n${lines.join('\n')}\n\n`;
}

/**
 * The same signal again within this time is the same request: Ctrl-C under `npm start` reaches Plinth
 * twice, from the terminal and forwarded by npm. Later, a second signal means "stop now".
 */
const SAME_REQUEST_MS = 1000;

/** Errors of database connections that PostgreSQL or the network ended: expected while stopping. */
const CONNECTION_ENDED = new Set(['57P01', '57P02', '57P03', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE']);
function isConnectionEnded(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (typeof code === 'string' && CONNECTION_ENDED.has(code)) || /Connection terminated/i.test(error.message);
}

/**
 * SIGTERM and SIGINT drain: no new requests or jobs, in-flight ones finish, claimed steps go back to
 * the queue, then the database closes (an embedded PostgreSQL stops) and the process exits 0 with one
 * line, `stopped`.
 */
function stopOnSignals(running: RunningPlinth, log: Logger): void {
  let stoppingSince: number | undefined;
  const shutdown = async (signal: string) => {
    if (stoppingSince !== undefined) {
      if (Date.now() - stoppingSince < SAME_REQUEST_MS) return;
      // A second signal means "now": skip the drain. An embedded PostgreSQL stops as its keeper sees Plinth go.
      log.warn({ signal }, 'stopping without draining');
      process.exit(1);
    }
    stoppingSince = Date.now();
    // A pool closed in the background may still hear of its connections ending: that is no crash.
    const ignoreEndedConnections = (error: unknown) => {
      if (isConnectionEnded(error)) return log.debug({ err: error }, 'a database connection ended while stopping');
      log.fatal({ err: error }, 'failed while stopping');
      process.exit(1);
    };
    process.on('uncaughtException', ignoreEndedConnections);
    process.on('unhandledRejection', ignoreEndedConnections);
    log.debug({ signal }, 'draining');
    try {
      await running.stop();
      log.info({ signal }, 'stopped');
      // Everything is drained and closed; don't wait for idle timers of the queue's pools to unwind.
      process.exit(process.exitCode ?? 0);
    } catch (error) {
      log.error({ err: error }, 'failed to stop cleanly');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
