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

  it('a port that is not a port number stops the start with a clear message', () => {
    assert.throws(() => loadConfig({ PORT: 'eighty' }), /PORT must be an integer port number/);
    assert.throws(() => loadConfig({ PLINTH_PG_PORT: '70000' }), /PLINTH_PG_PORT/);
  });
});
