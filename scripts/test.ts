// npm test: prepares one PostgreSQL server for the whole run (embedded, or TEST_DATABASE_URL), migrates
// a template database once, then runs every test file in parallel with node's test runner (the few that
// time a request's CPU run afterwards, alone). Each file clones the template into a database of its own,
// so files never share state. The tests run the TypeScript sources through tsx, except those that start
// bin/plinth.js, which runs the build in dist/: it is brought up to date here once, not by test processes
// racing to rebuild it.

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

/**
 * Files run after the others, one at a time: those that assert a bound on CPU time (a request's on the
 * server, the event loop's between two ticks in the fuzz suite: with the suite's other files on the same
 * cores, a thread's CPU time grows with what they evict from its caches, and a process descheduled for
 * long finds a backlog of callbacks to run at once; on two cores either has crossed the bound), and the
 * browser tests, whose Chromium processes would take those cores from the others.
 */
const RUN_ALONE = ['catalogue.hostile-schemas.test.ts', 'fuzz.api.test.ts', 'console.browser.test.ts'];

let running: ReturnType<typeof spawn> | undefined;
process.on('SIGINT', () => running?.kill('SIGINT'));
process.on('SIGTERM', () => running?.kill('SIGTERM'));

/** runTests runs files with node's test runner, `concurrency` at a time, and answers its exit code. */
async function runTests(files: string[], concurrency: number, env: NodeJS.ProcessEnv): Promise<number> {
  if (files.length === 0) return 0;
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit', env });
  running = child;
  return new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
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
  const env = { ...process.env, PLINTH_TEST_DATABASE_URL: baseUrl, PLINTH_TEST_TEMPLATE: template };
  const alone = files.filter((f) => RUN_ALONE.some((name) => f.endsWith(name)));
  let code = await runTests(
    files.filter((f) => !alone.includes(f)),
    concurrency,
    env,
  );
  if (alone.length > 0) code ||= await runTests(alone, 1, env);
  await dropTemplate(baseUrl, template).catch(() => {});
  if (embedded) await embedded.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  process.exit(code);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
