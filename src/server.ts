import type { Config } from './platform/config.ts';
import { createDb, type Db } from './platform/db/db.ts';
import { startEmbeddedPostgres } from './platform/db/embedded.ts';
import { migrateToLatest } from './platform/db/migrate.ts';
import { withRetries } from './platform/db/retry.ts';
import { buildApp, type App } from './platform/http/app.ts';
import type { Logger } from './platform/logger.ts';
import type { Tracing } from './platform/tracing.ts';
import { ensureAdmin } from './credentials/bootstrap.ts';
import { ROUTES } from './routes.ts';
import { loadEngineConfig } from './engine/engine-config.ts';
import { installQueue } from './engine/queue.ts';
import { EngineWorker } from './engine/worker.ts';
import { tellRunStoriesTo } from './engine/run-story.ts';
import { OPENTOFU_RUNNERS } from './opentofu/opentofu-step.ts';
import { GitPoller } from './git-webhooks/poller.ts';
import { domainChecks } from './domains/domain-poller.ts';
import { serviceDeploymentChecks } from './deployments/service-deployments.ts';
import { taskTargetChecks } from './deployments/task-targets.ts';
import { taskDefinitionChecks } from './deployments/task-definitions.ts';
import { DuePoller } from './platform/due-poller.ts';
import { FeedPruner } from './feed/feed.service.ts';
import { GitCacheSweeper } from './code-sources/git-cache-sweep.ts';
import { workRootFrom } from './platform/work-dirs.ts';
import { openExistingSecretBox, openSecretBox, type SecretKeySettings } from './platform/secrets/key-file.ts';
import type { SecretBox } from './platform/secrets/secret-box.ts';
import { startProcessMetrics } from './platform/metrics/process-metrics.ts';
import { startQueueSampler } from './engine/queue-gauges.ts';
import { anchorChainsWrittenBefore, startAuditJobs, validateAuditConstraints } from './audit/audit-maintenance.ts';
import { ensureAuditPartitions } from './audit/audit.repo.ts';
import { ALLOW_EVERYTHING } from './platform/outbound/address-policy.ts';
import { canConnect, prepareRuntimeRole, privilegeProblems } from './platform/db/roles.ts';

export interface DatabaseHandle {
  /** The service's connection: the runtime role's. */
  db: Db;
  url: string;
  /** The role that migrates and owns the schema: the runtime role itself when no other is given. */
  ownerUrl: string;
  /** The runtime role, when it is not the owner: created when missing, and granted what it needs at every start. */
  runtime?: { role: string; password: string | undefined; setPassword: boolean };
  close(): Promise<void>;
}

/**
 * openDatabase connects to DATABASE_URL (migrating as DATABASE_OWNER_URL when given), or starts the
 * embedded PostgreSQL when none is given: its superuser migrates, and the service connects as
 * `plinth_runtime`, whose password is kept in the data directory.
 */
export async function openDatabase(config: Config, log: Logger): Promise<DatabaseHandle> {
  if (config.databaseUrl) {
    const db = createDb(config.databaseUrl, { prepare: config.dbPrepare });
    const ownerUrl = config.databaseOwnerUrl ?? config.databaseUrl;
    const runtime = runtimeOf(config.databaseUrl, ownerUrl);
    return { db, url: config.databaseUrl, ownerUrl, runtime, close: () => db.destroy() };
  }
  const embedded = await startEmbeddedPostgres({
    dataDir: config.dataDir,
    port: config.embeddedPgPort,
    onLog: (line) => log.debug({ postgres: line }, 'postgres output'),
  });
  log.info({ dataDir: config.dataDir, port: config.embeddedPgPort }, 'started embedded postgres');
  const db = createDb(embedded.runtime.url, { prepare: config.dbPrepare });
  return {
    db,
    url: embedded.runtime.url,
    ownerUrl: embedded.url,
    runtime: { role: embedded.runtime.role, password: embedded.runtime.password, setPassword: true },
    close: async () => {
      await db.destroy();
      await embedded.stop();
    },
  };
}

/** The runtime role of DATABASE_URL when it is not DATABASE_OWNER_URL's: created with DATABASE_URL's password when missing. */
function runtimeOf(url: string, ownerUrl: string): DatabaseHandle['runtime'] {
  const runtime = new URL(url);
  const role = decodeURIComponent(runtime.username);
  if (!role || role === decodeURIComponent(new URL(ownerUrl).username)) return undefined;
  return { role, password: runtime.password ? decodeURIComponent(runtime.password) : undefined, setPassword: false };
}

/**
 * The installation's secret key for anchoring the audit chains written before anchors: the one the
 * servers have, never a new one (`plinth migrate` run without PLINTH_SECRET_KEY or the data directory
 * would otherwise anchor every chain with a key no server has).
 */
export function anchorKeyOf(settings: SecretKeySettings): () => SecretBox {
  return () => openExistingSecretBox(settings, 'Anchoring the audit chains written before anchors');
}

/**
 * prepareDatabase does, as the owner, what the runtime role may not: the migrations, the audit log's
 * partitions, the queue's schema, the runtime role's grants, the first anchoring of the audit chains
 * written before anchors, with the key `openAnchorKey` opens (only while that is pending, and only if
 * there is a chain to anchor), and the check of the audit log's old rows against constraints added
 * unchecked. Each step is idempotent and serialized in the database, so every process runs it at start.
 */
export async function prepareDatabase(database: DatabaseHandle, log: Logger, openAnchorKey: () => SecretBox): Promise<string[]> {
  const owner = createDb(database.ownerUrl, { max: 2, prepare: false });
  try {
    const applied = await migrateToLatest(owner);
    // An audited write needs its month's partition: ensured at every start, and daily by the workers.
    await ensureAuditPartitions(owner);
    // The queue's schema is needed by API processes too: they enqueue a run's first steps.
    await installQueue(database.ownerUrl, log);
    if (database.runtime) {
      const { role, password, setPassword } = database.runtime;
      // A password that already works is not sent again: ALTER ROLE carries it in the statement's text.
      await prepareRuntimeRole(owner, role, password, setPassword && !(await canConnect(database.url)));
    }
    const anchored = await anchorChainsWrittenBefore(owner, openAnchorKey);
    if (anchored) log.info({ anchored }, 'anchored the audit chains written before anchors');
    await validateAuditConstraints(owner, log);
    return applied;
  } finally {
    await owner.destroy();
  }
}

/** Says loudly, once at start, what the service's own role may do that it should not. */
async function warnOfPrivileges(db: Db, log: Logger): Promise<void> {
  const problems = await privilegeProblems(db);
  if (problems.length)
    log.warn(
      { problems },
      'the database role Plinth serves with has more privileges than it needs: give it a runtime role of its own (docs/operations.md#database-roles)',
    );
}

export interface ProcessRoles {
  api: boolean;
  worker: boolean;
}

export interface RunningPlinth {
  app?: App;
  worker?: EngineWorker;
  stop(): Promise<void>;
}

/**
 * runPlinth starts what one process runs: the API, the worker, or both, against one database.
 * Every process migrates and bootstraps at start; both are idempotent and serialized in the database.
 */
export async function runPlinth(config: Config, roles: ProcessRoles, log: Logger, tracing?: Tracing): Promise<RunningPlinth> {
  // API processes trigger, approve and cancel runs; workers run their steps: both tell of it.
  tellRunStoriesTo(log);
  const database = await openDatabase(config, log);
  // Each start-up step is idempotent (a failed migration rolled back): a database restarting or failing
  // over while a process starts is waited out for a minute, as running processes wait it out.
  const retried = <T>(what: string, step: () => Promise<T>) =>
    withRetries(step, { onRetry: (err, attempt, delayMs) => log.warn({ err, attempt, delayMs }, `${what}: the database is not reachable; retrying`) });
  const applied = await retried('migrations', () => prepareDatabase(database, log, anchorKeyOf(config)));
  if (applied.length) log.info({ migrations: applied }, 'applied migrations');
  await retried("the runtime role's check", () => warnOfPrivileges(database.db, log));
  const boot = await retried('bootstrap', () =>
    ensureAdmin(database.db, { adminToken: config.adminToken, adminEmail: config.adminEmail, dataDir: config.dataDir }),
  );
  if (boot.generatedToken) {
    process.stdout.write(`\nPlinth admin token (shown once; also in ${config.dataDir}/admin-token):\n${boot.generatedToken}\n\n`);
  }

  const secrets = openSecretBox(config);
  let worker: EngineWorker | undefined;
  let stopAuditJobs: (() => void) | undefined;
  if (roles.worker) {
    // The Git settings as read before the secrets were scrubbed from the environment (the app's private key).
    worker = new EngineWorker(
      database.db,
      database.url,
      { ...loadEngineConfig(process.env, config.publicUrl), git: config.git, runners: OPENTOFU_RUNNERS },
      log,
      secrets,
    );
    await worker.start();
    stopAuditJobs = startAuditJobs(database.db, secrets, log, {
      outbound: config.auditWebhookAllowPrivate ? { allow: ALLOW_EVERYTHING } : config.git.outbound,
      retryBaseMs: config.auditRetryBaseMs,
      timeoutMs: 10_000,
      batchSize: 500,
      deliveryEveryMs: config.auditDeliveryMs,
      maintenanceEveryMs: 3_600_000,
    });
  }
  // Off unless PLINTH_GIT_POLL_INTERVAL_S is set; worker processes poll (once per change, however many).
  const poller = roles.worker ? new GitPoller(database.db, secrets, config.git, log) : undefined;
  poller?.start();
  // Domains' DNS records and certificates, deployments' task definitions and service deployments, and
  // tasks' load balancer targets, when due (PLINTH_CLOUD_CHECK_INTERVAL_S).
  const checks = [
    ...domainChecks({ db: database.db, aws: config.aws, domains: config.domains }),
    ...taskDefinitionChecks({ db: database.db, aws: config.aws }),
    ...taskTargetChecks({ db: database.db, aws: config.aws }),
    ...serviceDeploymentChecks({ db: database.db, aws: config.aws }),
  ];
  const duePoller = roles.worker ? new DuePoller(database.db, checks, config.domains.checkIntervalSeconds, log) : undefined;
  duePoller?.start();
  // The live feed's entries past their retention, whatever else is configured.
  const feedPruner = new FeedPruner(database.db, log);
  feedPruner.start();
  // Workers fetch into this host's Git caches and the API snapshots into them: either keeps them bounded.
  const cacheSweeper = new GitCacheSweeper(database.db, config.git, workRootFrom(process.env), log);
  cacheSweeper.start();
  // Each process serves its own metrics on its own port (docs/operations.md#metrics); off unless set.
  const metricsServer =
    config.metricsPort === undefined
      ? undefined
      : await startProcessMetrics(database.db, {
          host: config.metricsHost,
          port: config.metricsPort,
          token: config.metricsToken,
          commit: config.buildCommit,
        });
  const stopSampler = metricsServer ? startQueueSampler(database.db, log) : undefined;
  if (metricsServer) log.info({ host: config.metricsHost, port: config.metricsPort }, 'serving metrics');
  let app: App | undefined;
  if (roles.api) {
    app = await buildApp({
      db: database.db,
      config,
      logger: log,
      routes: ROUTES,
      listenUrl: database.url,
      secrets,
      tracingPlugin: tracing?.fastifyPlugin,
      requestMetrics: metricsServer !== undefined,
    });
    await app.listen({ host: config.host, port: config.port });
  }
  return {
    app,
    worker,
    stop: async () => {
      // Both drain at once: the listener refuses new requests while in-flight ones finish, and the
      // worker takes no new jobs while its running attempts are stopped and handed back to the queue.
      await Promise.all([app?.close(), worker?.stop(), poller?.stop(), duePoller?.stop(), feedPruner.stop(), cacheSweeper.stop()]);
      stopSampler?.();
      stopAuditJobs?.();
      metricsServer?.closeAllConnections();
      await new Promise((resolve) => (metricsServer ? metricsServer.close(resolve) : resolve(undefined)));
      await database.close();
      await tracing?.shutdown();
    },
  };
}
