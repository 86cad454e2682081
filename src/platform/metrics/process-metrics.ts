import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Db } from '../db/db.ts';
import { poolOf } from '../db/db.ts';
import { enableDefaultMetrics, metrics } from './metrics.ts';
import { onScrape, startMetricsServer } from './server.ts';

/** The version in package.json, read once. */
function packageVersion(): string {
  try {
    return String(JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version);
  } catch {
    return 'unknown';
  }
}

export interface ProcessMetricsOptions {
  host: string;
  port: number;
  token?: string;
  commit: string;
}

/**
 * startProcessMetrics serves this process's metrics: prom-client's process defaults, the build, and
 * the database pool read from memory at each scrape. The returned server is closed by the caller.
 */
export async function startProcessMetrics(db: Db, options: ProcessMetricsOptions): Promise<Server> {
  enableDefaultMetrics();
  metrics.buildInfo.set({ version: packageVersion(), commit: options.commit }, 1);
  const pool = poolOf(db);
  if (pool) {
    onScrape(() => {
      metrics.dbPool.set({ state: 'idle' }, pool.idleCount);
      metrics.dbPool.set({ state: 'busy' }, pool.totalCount - pool.idleCount);
      metrics.dbPool.set({ state: 'waiting' }, pool.waitingCount);
    });
  }
  return startMetricsServer({ host: options.host, port: options.port, token: options.token });
}
