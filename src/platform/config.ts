import { isIP } from 'node:net';
import { loadAwsConfig, type AwsConfig } from './aws/aws-config.ts';
import { loadDomainConfig, type DomainConfig } from './domain-config.ts';
import path from 'node:path';
import { loadAuthLimits, type AuthLimitSettings } from './auth/auth-limiter.ts';
import { loadGitConfig, type GitConfig } from './git-config.ts';
import type { LogFormat } from './logger.ts';
import { metricsTokenProblem } from './metrics/exposure.ts';

/** Everything Plinth reads from its environment, parsed once at start. Documented in README.md. */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  /** DATABASE_OWNER_URL: the role that migrates and owns the schema, when DATABASE_URL is the runtime role (src/platform/db/roles.ts). */
  databaseOwnerUrl: string | undefined;
  embeddedPgPort: number;
  adminToken: string | undefined;
  adminEmail: string;
  logLevel: string;
  /** LOG_FORMAT: `json` or `pretty`; undefined: pretty on a terminal, JSON otherwise (logger.ts). */
  logFormat: LogFormat | undefined;
  publicUrl: string;
  /** PLINTH_SECRET_KEY; unset: a generated key file in the data directory (src/platform/secrets). */
  secretKey: string | undefined;
  /** PLINTH_SECRET_KEY_PREVIOUS: comma-separated keys still accepted for opening (key rotation). */
  previousSecretKeys: string[];
  /** PLINTH_GIT_* and PLINTH_GITAPP_*: timeouts, the checkout cache and the Git app (git-config.ts). */
  git: GitConfig;
  /** PLINTH_METRICS_PORT: where this process serves GET /metrics; undefined: no metrics listener. */
  metricsPort: number | undefined;
  /** PLINTH_METRICS_HOST: the address of the metrics listener. */
  metricsHost: string;
  /** PLINTH_METRICS_TOKEN: when set, a scrape must send it as a bearer token; required on a host that is not loopback. */
  metricsToken: string | undefined;
  /** PLINTH_BUILD_COMMIT: the commit this build is made of, for plinth_build_info. */
  buildCommit: string;
  /** PLINTH_AUDIT_WEBHOOK_ALLOW_PRIVATE: audit webhooks may target loopback and private addresses. */
  auditWebhookAllowPrivate: boolean;
  /** PLINTH_AUDIT_DELIVERY_MS: how often a worker delivers pending audit rows to webhooks. */
  auditDeliveryMs: number;
  /** PLINTH_AUDIT_RETRY_BASE_MS: the first retry delay of a failed delivery (doubling, up to an hour). */
  auditRetryBaseMs: number;
  /** PLINTH_DB_PREPARE: `auto` prepares statements a connection repeats (auto-prepare.ts); `off` for poolers that cannot keep them. */
  dbPrepare: boolean;
  /** PLINTH_AUTH_*: when failed authentications are refused (auth/auth-limiter.ts). */
  authLimits: AuthLimitSettings;
  /** PLINTH_TRUSTED_PROXIES: addresses and CIDRs whose X-Forwarded-For names the client. */
  trustedProxies: string[];
  /** PLINTH_AWS_ENDPOINT_URL and Plinth's own AWS credentials (aws/aws-config.ts). */
  aws: AwsConfig;
  /** PLINTH_DNS_SERVERS and PLINTH_CLOUD_CHECK_INTERVAL_S (domains/domain-config.ts). */
  domains: DomainConfig;
  /** PLINTH_CONSOLE_IDLE_MINUTES and PLINTH_CONSOLE_SESSION_HOURS: when a web console sign-in ends (console/sessions.service.ts). */
  consoleSessions: ConsoleSessionSettings;
}

export interface ConsoleSessionSettings {
  /** A session unused for this long has ended. */
  idleMs: number;
  /** A session ends this long after its sign-in, however busy. */
  maxAgeMs: number;
}

/** A whole number of `unit`s within bounds, as milliseconds. */
function durationFrom(env: NodeJS.ProcessEnv, name: string, fallback: number, unit: 'minutes' | 'hours', max: number): number {
  const raw = env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max) throw new Error(`${name} must be a whole number of ${unit} from 1 to ${max}, got "${raw}"`);
  return value * (unit === 'minutes' ? 60_000 : 3_600_000);
}

function consoleSessionsFrom(env: NodeJS.ProcessEnv): ConsoleSessionSettings {
  return {
    idleMs: durationFrom(env, 'PLINTH_CONSOLE_IDLE_MINUTES', 120, 'minutes', 7 * 24 * 60),
    maxAgeMs: durationFrom(env, 'PLINTH_CONSOLE_SESSION_HOURS', 24, 'hours', 30 * 24),
  };
}

function msFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 10 || value > 86_400_000) throw new Error(`${name} must be milliseconds between 10 and 86400000, got "${raw}"`);
  return value;
}

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    throw new Error(`${name} must be an integer port number, got "${raw}"`);
  }
  return value;
}

function logFormatFrom(env: NodeJS.ProcessEnv): LogFormat | undefined {
  const raw = env.LOG_FORMAT || undefined;
  if (raw !== undefined && raw !== 'json' && raw !== 'pretty') throw new Error(`LOG_FORMAT must be json or pretty, got "${raw}"`);
  return raw;
}

function prepareFrom(env: NodeJS.ProcessEnv): boolean {
  const raw = env.PLINTH_DB_PREPARE || 'auto';
  if (raw !== 'auto' && raw !== 'off') throw new Error(`PLINTH_DB_PREPARE must be auto or off, got "${raw}"`);
  return raw === 'auto';
}

/** The reverse proxies in front of the API: addresses or CIDRs; a name or a malformed entry stops the start. */
function trustedProxiesFrom(env: NodeJS.ProcessEnv): string[] {
  const entries = (env.PLINTH_TRUSTED_PROXIES ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address, bits, ...rest] = entry.split('/');
    const family = isIP(address);
    const bitsOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
    if (!family || !bitsOk || rest.length) throw new Error(`PLINTH_TRUSTED_PROXIES takes IP addresses and CIDRs, comma-separated; "${entry}" is neither`);
  }
  return entries;
}

/** PLINTH_METRICS_TOKEN, which a metrics listener off loopback must have (metrics/exposure.ts). */
function metricsTokenFrom(env: NodeJS.ProcessEnv, host: string, port: number | undefined): string | undefined {
  const token = env.PLINTH_METRICS_TOKEN || undefined;
  const problem = port === undefined ? undefined : metricsTokenProblem(host, token);
  if (problem) throw new Error(problem);
  return token;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const port = intFrom(env, 'PORT', 8080);
  const metricsPort = env.PLINTH_METRICS_PORT ? intFrom(env, 'PLINTH_METRICS_PORT', 0) : undefined;
  const metricsHost = env.PLINTH_METRICS_HOST || '127.0.0.1';
  return {
    host,
    port,
    dataDir: path.resolve(env.PLINTH_DATA_DIR || '.plinth'),
    databaseUrl: env.DATABASE_URL || undefined,
    databaseOwnerUrl: env.DATABASE_OWNER_URL || undefined,
    embeddedPgPort: intFrom(env, 'PLINTH_PG_PORT', 54329),
    adminToken: env.PLINTH_ADMIN_TOKEN || undefined,
    adminEmail: env.PLINTH_ADMIN_EMAIL || 'admin@localhost',
    logLevel: env.LOG_LEVEL || 'info',
    logFormat: logFormatFrom(env),
    publicUrl: env.PLINTH_PUBLIC_URL || `http://${host}:${port}`,
    secretKey: env.PLINTH_SECRET_KEY || undefined,
    previousSecretKeys: (env.PLINTH_SECRET_KEY_PREVIOUS ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean),
    git: loadGitConfig(env),
    metricsPort,
    metricsHost,
    metricsToken: metricsTokenFrom(env, metricsHost, metricsPort),
    buildCommit: env.PLINTH_BUILD_COMMIT || 'unknown',
    auditWebhookAllowPrivate: env.PLINTH_AUDIT_WEBHOOK_ALLOW_PRIVATE === 'true',
    auditDeliveryMs: msFrom(env, 'PLINTH_AUDIT_DELIVERY_MS', 5000),
    auditRetryBaseMs: msFrom(env, 'PLINTH_AUDIT_RETRY_BASE_MS', 10_000),
    dbPrepare: prepareFrom(env),
    authLimits: loadAuthLimits(env),
    trustedProxies: trustedProxiesFrom(env),
    aws: loadAwsConfig(env),
    domains: loadDomainConfig(env),
    consoleSessions: consoleSessionsFrom(env),
  };
}

/**
 * The variables that hold the platform's secrets. Once the configuration is read they are removed from
 * the process's environment, so nothing started later (a library's child process, a step in the
 * unisolated mode) inherits them. Steps never get the worker's environment anyway; this is the second line.
 */
export const SECRET_ENV_NAMES = [
  'PLINTH_ADMIN_TOKEN',
  'PLINTH_METRICS_TOKEN',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'DATABASE_URL',
  'DATABASE_OWNER_URL',
  'PLINTH_SECRET_KEY',
  'PLINTH_SECRET_KEY_PREVIOUS',
  'PGPASSWORD',
  'TEST_DATABASE_URL',
  'PLINTH_TEST_DATABASE_URL',
  'PLINTH_GITAPP_PRIVATE_KEY',
  'PLINTH_GITAPP_CLIENT_SECRET',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const;

/** scrubSecretEnv deletes SECRET_ENV_NAMES from `env` (the process's own by default). */
export function scrubSecretEnv(env: NodeJS.ProcessEnv = process.env): void {
  for (const name of SECRET_ENV_NAMES) delete env[name];
}
