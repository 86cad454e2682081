// The process commands: serve, api and worker start Plinth; migrate migrates and exits.

import { loadConfig, scrubSecretEnv } from './platform/config.ts';
import { createLogger } from './platform/logger.ts';
import { startTracing, tracingEnabled } from './platform/tracing.ts';
import type { ProcessRoles } from './server.ts';

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
  const log = createLogger(config.logLevel, tracing?.logFields);
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
  log.info({ command, url: roles.api ? `http://${config.host}:${config.port}` : undefined }, 'plinth started');
  // Logs are written in batches; this line is what people and scripts wait for.
  log.flush();

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      // A second signal means "now": skip the drain. The exit hook still stops an embedded Postgres.
      log.warn({ signal }, 'stopping without draining');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'draining');
    try {
      await running.stop();
      log.info('stopped');
      // Everything is drained and closed; don't wait for idle timers of the queue's pools to unwind.
      process.exit(process.exitCode ?? 0);
    } catch (error) {
      log.error({ err: error }, 'failed to stop cleanly');
      process.exitCode = 1;
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
