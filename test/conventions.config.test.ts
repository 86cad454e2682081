import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
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
      assert.throws(
        () => loadConfig({ PLINTH_METRICS_PORT: '9464', PLINTH_METRICS_HOST: host }),
        /PLINTH_METRICS_HOST is .* not loopback: set PLINTH_METRICS_TOKEN/,
      );
      assert.equal(loadConfig({ PLINTH_METRICS_PORT: '9464', PLINTH_METRICS_HOST: host, PLINTH_METRICS_TOKEN: 't' }).metricsToken, 't');
    }
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost'])
      assert.equal(loadConfig({ PLINTH_METRICS_PORT: '9464', PLINTH_METRICS_HOST: host }).metricsToken, undefined);
    assert.equal(loadConfig({ PLINTH_METRICS_HOST: '0.0.0.0' }).metricsPort, undefined, 'no listener, nothing to protect');
  });

  it('failed-authentication limits and trusted proxies are read, and a bad one stops the start', () => {
    const config = loadConfig({
      PLINTH_AUTH_FAILURES_PER_ADDRESS: '5',
      PLINTH_AUTH_FAILURES_PER_KEY_PREFIX: '7',
      PLINTH_AUTH_FAILURE_WINDOW_S: '30',
      PLINTH_AUTH_BLOCK_S: '90',
      PLINTH_AUTH_LIMIT_ENTRIES: '500',
      PLINTH_TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.1,::1',
    });
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

// The README's configuration table and the variables the code reads, checked both ways. A read is
// `env.X` or `process.env.X`, `env['X']`, a destructuring of `env`, a settings helper called with
// `env` and the name (`intFrom(env, 'X', …)`, `positive(env, 'X', …)`, `oneOf(env, 'X', …)`), or the
// log limits' reader `read('X', …)`. So that a new way of reading cannot slip past these patterns,
// every other product-shaped name in the code must be one of NOT_SETTINGS.

const SRC = path.resolve('src');
const README = path.resolve('README.md');

/** Product settings: PLINTH_*, DATABASE_*, LOG_*, OTEL_*, AWS_*, PORT, HOST and the CLI's XDG_CONFIG_HOME and NO_COLOR; never the tests' own. */
const PRODUCT_NAME = /^(?:(?:PLINTH|DATABASE|LOG|OTEL|AWS)_[A-Z0-9_]*[A-Z0-9]|PORT|HOST|NO_COLOR|XDG_CONFIG_HOME)$/;
const isSetting = (name: string) => PRODUCT_NAME.test(name) && !name.startsWith('PLINTH_TEST_');

/**
 * Product-shaped names in the code that are not settings Plinth reads: what it sets in a step's
 * environment or in its own sandboxed scripts, variables only scrubbed from the environment (read by the
 * OpenTelemetry SDK itself), and a constant.
 */
const NOT_SETTINGS = new Set([
  // The list of AWS regions a default value offers.
  'AWS_REGIONS',
  'PLINTH_RUN_ID',
  'PLINTH_STEP_ID',
  'PLINTH_STEP_EXECUTION_ID',
  'PLINTH_ATTEMPT_EPOCH',
  'PLINTH_RETRY_ATTEMPT',
  'PLINTH_ACTION',
  'PLINTH_STACK_ID',
  'PLINTH_INPUTS',
  'PLINTH_COMMIT_SHA',
  'PLINTH_CHECKOUT_DIR',
  'PLINTH_GIT_CACHE',
  'PLINTH_GIT_URL',
  'PLINTH_GIT_REF',
  'PLINTH_GIT_COMMIT',
  'PLINTH_GIT_PATH',
  'PLINTH_GIT_MAX_BLOCKS',
  'PLINTH_TOFU',
  'PLINTH_TFVARS_JSON',
  'PLINTH_PLAN_CHUNK',
  'PLINTH_SENSITIVE_NAMES',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'LOG_STREAMS',
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

/** `env` or `process.env`. */
function isEnv(node: ts.Expression): boolean {
  if (ts.isIdentifier(node)) return node.text === 'env';
  return ts.isPropertyAccessExpression(node) && node.name.text === 'env' && ts.isIdentifier(node.expression) && node.expression.text === 'process';
}

function isAssigned(node: ts.Node): boolean {
  const parent = node.parent;
  return ts.isBinaryExpression(parent) && parent.left === node && parent.operatorToken.kind === ts.SyntaxKind.EqualsToken;
}

/** The settings the code reads (name → files), and every other product-shaped name it mentions outside comments. */
function scanCode(): { reads: Map<string, Set<string>>; mentioned: Map<string, Set<string>> } {
  const reads = new Map<string, Set<string>>();
  const mentioned = new Map<string, Set<string>>();
  const note = (into: Map<string, Set<string>>, name: string, file: string) => {
    if (isSetting(name)) into.set(name, (into.get(name) ?? new Set()).add(path.relative('.', file)));
  };
  for (const file of sourceFiles(SRC)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isPropertyAccessExpression(node) && isEnv(node.expression) && !isAssigned(node)) note(reads, node.name.text, file);
      if (ts.isElementAccessExpression(node) && isEnv(node.expression) && ts.isStringLiteralLike(node.argumentExpression) && !isAssigned(node))
        note(reads, node.argumentExpression.text, file);
      if (ts.isVariableDeclaration(node) && ts.isObjectBindingPattern(node.name) && node.initializer && isEnv(node.initializer)) {
        for (const element of node.name.elements) note(reads, ((element.propertyName ?? element.name) as ts.Identifier).text, file);
      }
      if (ts.isCallExpression(node)) {
        const args = node.arguments;
        args.forEach((arg, i) => {
          const next = args[i + 1];
          if (isEnv(arg) && next && ts.isStringLiteralLike(next)) note(reads, next.text, file);
        });
        if (ts.isIdentifier(node.expression) && node.expression.text === 'read' && args[0] && ts.isStringLiteralLike(args[0])) note(reads, args[0].text, file);
      }
      if (ts.isIdentifier(node) || ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
        for (const [name] of node.text.matchAll(/\b[A-Z][A-Z0-9_]*[A-Z0-9]\b/g)) note(mentioned, name, file);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { reads, mentioned };
}

interface ConfigRow {
  /** The row as written, for messages. */
  text: string;
  /** Variables the first cell names one by one. */
  names: string[];
  /** `PREFIX_*` families the first cell names: with a doc, the doc's table lists each; `other …` families are the SDK's own. */
  families: { prefix: string; doc?: string; others: boolean }[];
}

/** The rows of the table under README.md's "## Configuration". */
function configTable(): ConfigRow[] {
  const readme = readFileSync(README, 'utf8');
  const start = readme.indexOf('\n## Configuration\n');
  assert.ok(start >= 0, 'README.md has a "## Configuration" section');
  const end = readme.indexOf('\n## ', start + 1);
  const rows = readme
    .slice(start, end < 0 ? undefined : end)
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2);
  assert.ok(rows.length > 10, 'the configuration table has rows');
  return rows.map((text) => {
    const [first, ...rest] = text.split('|').slice(1, -1);
    const doc = /\]\((docs\/[\w-]+\.md)(?:#[\w-]*)?\)/.exec(rest.join('|'))?.[1];
    const names: string[] = [];
    const families: ConfigRow['families'] = [];
    for (const match of first.matchAll(/(other\s+)?`([^`]+)`/g)) {
      const token = match[2];
      if (token.endsWith('_*')) families.push({ prefix: token.slice(0, -1), doc, others: Boolean(match[1]) });
      else names.push(token);
    }
    return { text, names, families };
  });
}

describe('the README configuration table and the variables the code reads', () => {
  const { reads, mentioned } = scanCode();
  const rows = configTable();
  const listed = new Set(rows.flatMap((row) => row.names));

  it('finds the settings the code reads in every way it reads them', () => {
    // Each reading pattern, by one variable the code is known to read that way.
    for (const name of [
      'PLINTH_DATA_DIR',
      'OTEL_SERVICE_NAME',
      'PORT',
      'PLINTH_WORKER_LEASE_MS',
      'PLINTH_SANDBOX',
      'PLINTH_STEP_LOG_MAX_BYTES',
      'PLINTH_AUTH_BLOCK_S',
    ]) {
      assert.ok(reads.has(name), `${name} is found as read`);
    }
    const unclassified = [...mentioned.keys()].filter((name) => !reads.has(name) && !NOT_SETTINGS.has(name));
    assert.deepEqual(
      unclassified,
      [],
      `names in src/ that are neither read as a setting by a known pattern nor in NOT_SETTINGS: ${unclassified.map((n) => `${n} (${[...mentioned.get(n)!].join(', ')})`).join('; ')}`,
    );
  });

  it('lists every variable the code reads', () => {
    const missing = [...reads.keys()].filter((name) => {
      if (listed.has(name)) return false;
      const family = rows.flatMap((row) => row.families).find((f) => name.startsWith(f.prefix) && f.doc && !f.others);
      return !family || !readFileSync(path.resolve(family.doc!), 'utf8').includes(`\`${name}\``);
    });
    assert.deepEqual(
      missing,
      [],
      `read in src/ but not in README.md's configuration table (nor in the doc a \`PREFIX_*\` row points to): ${missing.map((n) => `${n} (${[...reads.get(n)!].join(', ')})`).join('; ')}`,
    );
  });

  it('lists only variables the code reads', () => {
    for (const row of rows) {
      assert.ok(row.names.length + row.families.length > 0, `a row names its variables in backticks: ${row.text}`);
      for (const name of row.names) {
        assert.ok(isSetting(name), `${name} is not a product setting (test-only variables are described with the tests, not here): ${row.text}`);
        assert.ok(reads.has(name), `${name} is in the table but nothing in src/ reads it: ${row.text}`);
      }
      for (const family of row.families) {
        assert.ok(
          [...reads.keys()].some((name) => name.startsWith(family.prefix)),
          `the code reads some ${family.prefix}*: ${row.text}`,
        );
        assert.ok(family.doc || family.others, `a ${family.prefix}* row points to the doc that lists each: ${row.text}`);
      }
    }
  });
});
