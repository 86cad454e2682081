import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../src/platform/config.ts';

describe('configuration from the environment', () => {
  it('with nothing set: 127.0.0.1:8080, data in ./.plinth, embedded PostgreSQL, admin@localhost', () => {
    const config = loadConfig({});
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 8080);
    assert.equal(config.dataDir, path.resolve('.plinth'));
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.adminToken, undefined);
    assert.equal(config.adminEmail, 'admin@localhost');
    assert.equal(config.logLevel, 'info');
    assert.equal(config.publicUrl, 'http://127.0.0.1:8080');
  });

  it('reads every documented variable', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: '9000',
      PLINTH_DATA_DIR: '/var/lib/plinth',
      DATABASE_URL: 'postgres://u:p@db:5432/plinth',
      PLINTH_PG_PORT: '6543',
      PLINTH_ADMIN_TOKEN: 'plk_x',
      PLINTH_ADMIN_EMAIL: 'ops@example.com',
      LOG_LEVEL: 'debug',
      PLINTH_PUBLIC_URL: 'https://plinth.example.com',
    });
    // Other domains add settings of their own; these are the foundation's.
    const expected = {
      host: '0.0.0.0',
      port: 9000,
      dataDir: '/var/lib/plinth',
      databaseUrl: 'postgres://u:p@db:5432/plinth',
      embeddedPgPort: 6543,
      adminToken: 'plk_x',
      adminEmail: 'ops@example.com',
      logLevel: 'debug',
      publicUrl: 'https://plinth.example.com',
    };
    for (const [key, value] of Object.entries(expected)) assert.equal(config[key as keyof typeof config], value, key);
  });

  it('a metrics listener off loopback without PLINTH_METRICS_TOKEN stops the start, saying what to set', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'metrics.internal']) {
      assert.throws(() => loadConfig({ PLINTH_METRICS_PORT: '9464', PLINTH_METRICS_HOST: host }), /PLINTH_METRICS_HOST is .* not loopback: set PLINTH_METRICS_TOKEN/);
      assert.equal(loadConfig({ PLINTH_METRICS_PORT: '9464', PLINTH_METRICS_HOST: host, PLINTH_METRICS_TOKEN: 't' }).metricsToken, 't');
    }
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) assert.equal(loadConfig({ PLINTH_METRICS_PORT: '9464', PLINTH_METRICS_HOST: host }).metricsToken, undefined);
    assert.equal(loadConfig({ PLINTH_METRICS_HOST: '0.0.0.0' }).metricsPort, undefined, 'no listener, nothing to protect');
  });

  it('failed-authentication limits and trusted proxies are read, and a bad one stops the start', () => {
    const config = loadConfig({ PLINTH_AUTH_FAILURES_PER_ADDRESS: '5', PLINTH_AUTH_FAILURES_PER_KEY_PREFIX: '7', PLINTH_AUTH_FAILURE_WINDOW_S: '30', PLINTH_AUTH_BLOCK_S: '90', PLINTH_AUTH_LIMIT_ENTRIES: '500', PLINTH_TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.1,::1' });
    assert.deepEqual(config.authLimits, { failuresPerAddress: 5, failuresPerKeyPrefix: 7, windowMs: 30_000, blockMs: 90_000, maxEntries: 500 });
    assert.deepEqual(config.trustedProxies, ['10.0.0.0/8', '192.0.2.1', '::1']);
    assert.deepEqual(loadConfig({}).authLimits, { failuresPerAddress: 30, failuresPerKeyPrefix: 30, windowMs: 60_000, blockMs: 60_000, maxEntries: 10_000 });
    assert.deepEqual(loadConfig({}).trustedProxies, []);
    assert.throws(() => loadConfig({ PLINTH_AUTH_FAILURES_PER_ADDRESS: '0' }), /PLINTH_AUTH_FAILURES_PER_ADDRESS must be a positive integer/);
    assert.throws(() => loadConfig({ PLINTH_TRUSTED_PROXIES: 'proxy.internal' }), /PLINTH_TRUSTED_PROXIES.*"proxy.internal"/);
    assert.throws(() => loadConfig({ PLINTH_TRUSTED_PROXIES: '10.0.0.0/33' }), /PLINTH_TRUSTED_PROXIES/);
  });

  it('a port that is not a port number stops the start with a clear message', () => {
    assert.throws(() => loadConfig({ PORT: 'eighty' }), /PORT must be an integer port number/);
    assert.throws(() => loadConfig({ PLINTH_PG_PORT: '70000' }), /PLINTH_PG_PORT/);
  });
});
