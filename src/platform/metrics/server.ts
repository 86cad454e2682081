import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { metricsTokenProblem } from './exposure.ts';
import { registry } from './metrics.ts';

/** Read just before each scrape: cheap, in-memory values of this process (pool sizes, busy slots). */
const scrapeHooks = new Set<() => void>();

/** onScrape adds a function that refreshes gauges from memory before each scrape; the returned function removes it. */
export function onScrape(fn: () => void): () => void {
  scrapeHooks.add(fn);
  return () => scrapeHooks.delete(fn);
}

/** renderMetrics is the Prometheus text of this process's registry. */
export async function renderMetrics(): Promise<string> {
  for (const fn of scrapeHooks) fn();
  return registry.metrics();
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header ?? '');
  const wanted = Buffer.from(`Bearer ${token}`);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

export interface MetricsServerOptions {
  host: string;
  port: number;
  /** When set, a scrape must send `Authorization: Bearer <token>`; required unless `host` is loopback. */
  token?: string;
}

/**
 * startMetricsServer serves GET /metrics on its own port, apart from the API: no tenant's credential
 * reaches it, it is never in the API's OpenAPI document, and it can be bound to an address only the
 * monitoring network sees. Its own plain node:http server keeps the API's hooks off the scrape. It
 * refuses to listen off loopback without a token.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<Server> {
  const problem = metricsTokenProblem(options.host, options.token);
  if (problem) throw new Error(problem);
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (options.token && !tokenMatches(request.headers.authorization, options.token)) {
      response.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }).end('a metrics token is required\n');
      return;
    }
    renderMetrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return server;
}

/** The port a started metrics server listens on (useful with port 0). */
export function metricsPort(server: Server): number {
  return (server.address() as AddressInfo).port;
}
