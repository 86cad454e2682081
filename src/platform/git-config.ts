import { positiveIntFrom } from './env-settings.ts';
import { egressAllowListFrom } from './outbound/address-policy.ts';
import type { OutboundPolicy } from './outbound/http.ts';

/**
 * The Git knobs (README configuration table, docs/git.md). The app install is configured only when its
 * install URL is set; its private key is a platform secret, scrubbed from the environment once read.
 */
export interface GitConfig {
  /** PLINTH_GIT_TIMEOUT_MS: how long listing a repository's branches may take before it is a 504. */
  remoteTimeoutMs: number;
  /** PLINTH_GIT_FETCH_TIMEOUT_MS: how long a step's checkout may take before the step fails. */
  fetchTimeoutMs: number;
  /** PLINTH_GIT_CACHE_DIR: the per-source caches of a worker host; unset: `<work root>/plinth-git-cache`. */
  cacheDir: string | undefined;
  /**
   * PLINTH_GIT_CACHE_MAX_BYTES: the largest file one fetch may write into a source's cache (its pack),
   * and the size past which a fetch empties the cache before it fetches.
   */
  cacheMaxBytes: number;
  /**
   * PLINTH_GIT_CACHE_TOTAL_MAX_BYTES: the room all caches of a host may take together; a use empties the
   * least recently used caches nobody is using until they fit.
   */
  cacheTotalMaxBytes: number;
  /** PLINTH_GIT_CACHE_IDLE_HOURS: how long a source's cache may go unused before the sweep empties it. */
  cacheIdleHours: number;
  /** PLINTH_MODULE_ARCHIVE_MAX_BYTES: the largest .tar.gz a module snapshot keeps of a source's directory. */
  snapshotMaxBytes: number;
  /** PLINTH_GIT_STATE_TTL_S: how long an OAuth or app-install state stays valid. */
  stateTtlSeconds: number;
  /** PLINTH_GIT_HTTP_TIMEOUT_MS: a call to an OAuth server or the Git app's API. */
  httpTimeoutMs: number;
  /** PLINTH_GIT_POLL_INTERVAL_S: how often workers poll tracked branches for sources that cannot send webhooks; 0 (default): never. */
  pollIntervalSeconds: number;
  app: GitAppConfig | undefined;
  /**
   * Where Plinth's own calls on a tenant's behalf may connect (branch listings, OAuth and Git app
   * endpoints, audit webhooks): the public internet and PLINTH_STEP_EGRESS_ALLOW, as for steps.
   */
  outbound: OutboundPolicy;
}

export interface GitAppConfig {
  /** PLINTH_GITAPP_INSTALL_URL: the app's installation page (GitHub: https://github.com/apps/<name>/installations/new). */
  installUrl: string;
  /** PLINTH_GITAPP_ID and PLINTH_GITAPP_PRIVATE_KEY: what mints installation tokens; unset: installations are recorded, not used to fetch. */
  appId: string | undefined;
  privateKey: string | undefined;
  /** PLINTH_GITAPP_API_URL: the provider's API (default https://api.github.com). */
  apiUrl: string;
  /**
   * PLINTH_GITAPP_CLIENT_ID and PLINTH_GITAPP_CLIENT_SECRET: the app's OAuth client, which proves at the
   * install's return leg that the returning account can access the installation; unset: no install is accepted.
   */
  clientId: string | undefined;
  clientSecret: string | undefined;
}

export function loadGitConfig(env: NodeJS.ProcessEnv): GitConfig {
  const installUrl = env.PLINTH_GITAPP_INSTALL_URL || undefined;
  if (installUrl && !/^https?:\/\//.test(installUrl)) throw new Error('PLINTH_GITAPP_INSTALL_URL must be an http(s) URL');
  return {
    remoteTimeoutMs: positiveIntFrom(env, 'PLINTH_GIT_TIMEOUT_MS', 15_000),
    fetchTimeoutMs: positiveIntFrom(env, 'PLINTH_GIT_FETCH_TIMEOUT_MS', 300_000),
    cacheDir: env.PLINTH_GIT_CACHE_DIR || undefined,
    cacheMaxBytes: positiveIntFrom(env, 'PLINTH_GIT_CACHE_MAX_BYTES', 2 * 1024 ** 3),
    cacheTotalMaxBytes: positiveIntFrom(env, 'PLINTH_GIT_CACHE_TOTAL_MAX_BYTES', 20 * 1024 ** 3),
    cacheIdleHours: positiveIntFrom(env, 'PLINTH_GIT_CACHE_IDLE_HOURS', 168),
    snapshotMaxBytes: positiveIntFrom(env, 'PLINTH_MODULE_ARCHIVE_MAX_BYTES', 20 * 1024 * 1024),
    stateTtlSeconds: positiveIntFrom(env, 'PLINTH_GIT_STATE_TTL_S', 600),
    httpTimeoutMs: positiveIntFrom(env, 'PLINTH_GIT_HTTP_TIMEOUT_MS', 10_000),
    pollIntervalSeconds: env.PLINTH_GIT_POLL_INTERVAL_S === '0' ? 0 : positiveIntFrom(env, 'PLINTH_GIT_POLL_INTERVAL_S', 0),
    app: installUrl
      ? {
          installUrl,
          appId: env.PLINTH_GITAPP_ID || undefined,
          privateKey: env.PLINTH_GITAPP_PRIVATE_KEY?.replace(/\\n/g, '\n') || undefined,
          apiUrl: (env.PLINTH_GITAPP_API_URL || 'https://api.github.com').replace(/\/+$/, ''),
          clientId: env.PLINTH_GITAPP_CLIENT_ID || undefined,
          clientSecret: env.PLINTH_GITAPP_CLIENT_SECRET || undefined,
        }
      : undefined,
    outbound: { allow: egressAllowListFrom(env) },
  };
}
