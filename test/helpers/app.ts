import type { InjectOptions } from 'fastify';
import { loadConfig } from '../../src/platform/config.ts';
import { createDb, type Db } from '../../src/platform/db/db.ts';
import { buildApp, type App, type RoutePlugin } from '../../src/platform/http/app.ts';
import { ensureAdmin } from '../../src/credentials/bootstrap.ts';
import { ROUTES } from '../../src/routes.ts';
import { SecretBox, keyIdOf } from '../../src/platform/secrets/secret-box.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';

/** A fixed key: tests that read sealed columns open them with TEST_SECRETS. */
const TEST_KEY = Buffer.alloc(32, 7);
export const TEST_SECRETS = new SecretBox({ id: keyIdOf(TEST_KEY), bytes: TEST_KEY });

export const ADMIN_TOKEN = 'plk_test_admin_token_0123456789abcdefghijklmnopqrstuv';

export interface Response<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
}

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  rawBody?: string;
}

export interface TestApp {
  app: App;
  db: Db;
  database: TestDatabase;
  adminToken: string;
  call<T = any>(method: InjectOptions['method'], url: string, options?: CallOptions): Promise<Response<T>>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Observe requests in the latency histogram, as a process serving metrics does. */
  requestMetrics?: boolean;
  /** Test-only route plugins registered after the product's own routes. */
  extraRoutes?: RoutePlugin[];
  /** Test-only plugins registered before the product's routes (e.g. an onRoute hook that records them). */
  routesBefore?: RoutePlugin[];
  /** How long the API serves a resolved credential from memory (default CREDENTIAL_CACHE_TTL_MS). */
  credentialCacheTtlMs?: number;
  /**
   * PLINTH_STEP_EGRESS_ALLOW of the app. The tests' Git and OAuth servers listen on loopback, as a
   * self-hosted server on the Plinth host would: allowed by default, as its operator would allow it.
   */
  egressAllow?: string;
  /** Further settings of the app, as the environment would give them (PLINTH_AWS_ENDPOINT_URL, …). */
  env?: Record<string, string>;
  /** The app's database connections (default 10, a process's). */
  poolSize?: number;
}

/** startTestApp builds Plinth on a fresh database of its own, with the bootstrap admin in place. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  const db = createDb(database.url, options.poolSize);
  const config = {
    ...loadConfig({ PLINTH_STEP_EGRESS_ALLOW: options.egressAllow ?? '127.0.0.1,::1', ...options.env }),
    databaseUrl: database.url,
    adminToken: ADMIN_TOKEN,
  };
  await ensureAdmin(db, { adminToken: ADMIN_TOKEN, adminEmail: config.adminEmail });
  const app = await buildApp({
    db,
    config,
    routes: [...(options.routesBefore ?? []), ...ROUTES, ...(options.extraRoutes ?? [])],
    secrets: TEST_SECRETS,
    requestMetrics: options.requestMetrics,
    credentialCacheTtlMs: options.credentialCacheTtlMs,
  });

  const call = async <T = any>(method: InjectOptions['method'], url: string, options: CallOptions = {}): Promise<Response<T>> => {
    const token = options.token === undefined ? ADMIN_TOKEN : options.token;
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let payload: string | undefined = options.rawBody;
    if (options.body !== undefined) payload = JSON.stringify(options.body);
    if (payload !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const res = await app.inject({ method, url, headers, payload });
    const body = res.body.length ? JSON.parse(res.body) : undefined;
    return { status: res.statusCode, body, headers: res.headers as Response['headers'] };
  };

  return {
    app,
    db,
    database,
    adminToken: ADMIN_TOKEN,
    call,
    close: async () => {
      await app.close();
      await db.destroy();
      await database.drop();
    },
  };
}
