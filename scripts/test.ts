// npm test: prepares one PostgreSQL server for the whole run (embedded, or TEST_DATABASE_URL), migrates
// a template database once, then runs every test file in parallel with node's test runner. Each file
// clones the template into a database of its own, so files never share state. The tests run the
// TypeScript sources through tsx, except those that start bin/plinth.js, which runs the build in dist/:
// it is brought up to date here once, not by test processes racing to rebuild it.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDb } from '../src/platform/db/db.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../src/platform/db/embedded.ts';
import { migrateToLatest } from '../src/platform/db/migrate.ts';
import { databaseUrl } from '../test/helpers/database.ts';

function findTests(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue;
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) found.push(...findTests(full));
    else if (entry.endsWith('.test.ts')) found.push(full);
  }
  return found;
}

async function prepareTemplate(baseUrl: string): Promise<string> {
  const template = `plinth_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${template}`);
  await admin.query(`create database ${template}`);
  await admin.end();
  const db = createDb(databaseUrl(baseUrl, template), 2);
  await migrateToLatest(db);
  await db.destroy();
  return template;
}

async function dropTemplate(baseUrl: string, template: string) {
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${template} with (force)`);
  await admin.end();
}

async function main() {
  execFileSync(process.execPath, ['scripts/build.js', '--if-stale'], { stdio: 'inherit' });
  const filters = process.argv.slice(2);
  const files = [...findTests('test'), ...findTests('src')].filter((f) => filters.length === 0 || filters.some((x) => f.includes(x))).sort();
  let embedded: EmbeddedDatabase | undefined;
  let dataDir: string | undefined;
  let baseUrl = process.env.TEST_DATABASE_URL;
  if (!baseUrl) {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-test-'));
    embedded = await startEmbeddedPostgres({ dataDir, port: await freePort(), ephemeral: true });
    baseUrl = embedded.url;
  }
  const template = await prepareTemplate(baseUrl);
  const concurrency = Number(process.env.TEST_CONCURRENCY || Math.max(2, os.availableParallelism() * 2));
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files], {
    stdio: 'inherit',
    env: { ...process.env, PLINTH_TEST_DATABASE_URL: baseUrl, PLINTH_TEST_TEMPLATE: template },
  });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const code: number = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
  await dropTemplate(baseUrl, template).catch(() => {});
  if (embedded) await embedded.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  process.exit(code);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
