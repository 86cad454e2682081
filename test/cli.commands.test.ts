import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { openSecretBox } from '../src/platform/secrets/key-file.ts';
import { sensitiveVariableContext } from '../src/stacks/stack-variables.service.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { cliUser, type CliUser } from './helpers/cli.ts';
import { FAST_ENGINE_ENV } from './helpers/engine.ts';
import { PLINTH_BIN, startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

const TOKEN = 'plk_cli_commands_test_token_0123456789abcdefghijklmno';

describe('plinth user commands: -o json everywhere, exit codes, precedence', () => {
  let database: TestDatabase;
  let plinth: PlinthProcess;
  let user: CliUser;
  let dir: string;

  before(async () => {
    database = await createTestDatabase();
    dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-cli-commands-'));
    // Generous: under a full parallel npm test a start can take far longer than on a quiet machine.
    plinth = await startPlinthProcess(
      { ...FAST_ENGINE_ENV, DATABASE_URL: database.url, PLINTH_ADMIN_TOKEN: TOKEN, PLINTH_DATA_DIR: dir },
      { readyTimeoutMs: 120_000 },
    );
    user = cliUser();
    const login = await user.json(['login', '--host', plinth.baseUrl, '--with-token'], { input: TOKEN });
    assert.equal(login.email, 'admin@localhost');
  });
  after(async () => {
    await plinth?.stop();
    await database.drop();
  });

  /** A sensitive variable's value as the server stored it: opened with the installation's key (its data directory's key file). */
  const sealedVariable = async (stackId: string, name: string): Promise<unknown> => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query('select sealed_value from stack_sensitive_variables where stack_id = $1 and name = $2', [stackId, name]);
      const box = openSecretBox({ secretKey: undefined, previousSecretKeys: [], dataDir: dir });
      return JSON.parse(box.open(rows[0].sealed_value, sensitiveVariableContext(stackId, name)));
    } finally {
      await client.end();
    }
  };

  it('every command prints JSON that parses with -o json, mutations included', async () => {
    assert.equal((await user.json(['version'])).cli, '0.0.0');
    assert.equal((await user.json(['whoami'])).principalType, 'MEMBERSHIP');
    assert.equal((await user.json(['context', 'list']))[0].name, 'default');
    const org = await user.json(['org', 'create', '--name', 'Acme', '--billing-email', 'billing@acme.test']);
    assert.equal((await user.json(['org', 'get', org.id])).name, 'Acme');
    assert.ok((await user.json(['org', 'list'])).some((o: { id: string }) => o.id === org.id));
    assert.equal((await user.json(['context', 'set', 'acme', '--host', plinth.baseUrl, '--org', org.id])).organization, org.id);
    assert.equal((await user.run(['whoami', '--context', 'acmee'])).code, 2);
    assert.equal((await user.json(['login', '--context', 'second', '--host', plinth.baseUrl, '--with-token'], { input: TOKEN })).email, 'admin@localhost');
    assert.equal((await user.json(['context', 'show', '--context', 'second'])).host, plinth.baseUrl);
    assert.equal((await user.json(['context', 'use', 'default'])).name, 'default');

    const project = await user.json(['project', 'create', '--given-id', 'web', '--name', 'Web']);
    assert.equal((await user.json(['project', 'get', project.id])).givenId, 'web');
    assert.ok((await user.json(['project', 'list'])).some((p: { id: string }) => p.id === project.id));
    const env = await user.json(['env', 'create', '--project', project.id, '--given-id', 'prod', '--name', 'Prod']);
    assert.equal((await user.json(['env', 'get', env.id])).givenId, 'prod');
    assert.deepEqual(
      (await user.json(['env', 'list', '--project', project.id])).map((e: { id: string }) => e.id),
      [env.id],
    );

    const pipelines = path.join(dir, 'pipelines.yaml');
    writeFileSync(pipelines, 'change:\n  steps:\n    - {id: hello, name: Hello, type: script, with: {command: "echo hi"}}\n');
    const stack = await user.json(['stack', 'create', '--project', project.id, '--env', env.id, '--name', 'site', '-f', pipelines]);
    assert.equal((await user.json(['stack', 'get', stack.id])).name, 'site');
    assert.deepEqual(
      (await user.json(['stack', 'list', '--project', project.id])).map((s: { id: string }) => s.id),
      [stack.id],
    );
    assert.deepEqual(await user.json(['stack', 'outputs', stack.id]), {});
    const region = { name: 'region', sensitive: false, value: 'eu-west-1' };
    assert.deepEqual(await user.json(['stack', 'var', 'set', stack.id, 'region=eu-west-1', 'replicas=3']), [
      region,
      { name: 'replicas', sensitive: false, value: 3 },
    ]);
    const refused = await user.run(['stack', 'var', 'set', stack.id, 'db_password=hunter2-secret', '--sensitive']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /never taken from the command line.*--value-file -/);
    assert.doesNotMatch(refused.stderr, /hunter2/);
    assert.deepEqual(await user.json(['stack', 'var', 'set', stack.id, 'db_password', '--sensitive', '--value-file', '-'], { input: 'hunter2-secret\n' }), [
      region,
      { name: 'replicas', sensitive: false, value: 3 },
      { name: 'db_password', sensitive: true },
    ]);
    assert.equal(await sealedVariable(stack.id, 'db_password'), 'hunter2-secret', 'the value as piped, its final newline dropped');
    const valueFile = path.join(dir, 'api-key.txt');
    writeFileSync(valueFile, '0042 with spaces\n');
    await user.json(['stack', 'var', 'set', stack.id, 'api_key', '--sensitive', '--value-file', valueFile]);
    assert.equal(await sealedVariable(stack.id, 'api_key'), '0042 with spaces', 'text from a file, never read as JSON');
    assert.equal((await user.run(['stack', 'var', 'set', stack.id, 'api_key', '--sensitive'])).code, 2);
    assert.equal((await user.run(['stack', 'var', 'set', stack.id, 'a', 'b', '--sensitive', '--value-file', valueFile])).code, 2);
    assert.equal(
      (await user.run(['stack', 'var', 'set', stack.id, 'api_key', '--sensitive', '--value-file', '-'], { input: '\n' })).code,
      2,
      'an empty value is refused',
    );
    assert.deepEqual(await user.json(['stack', 'var', 'unset', stack.id, 'api_key']), [
      region,
      { name: 'replicas', sensitive: false, value: 3 },
      { name: 'db_password', sensitive: true },
    ]);
    const table = await user.run(['stack', 'var', 'list', stack.id]);
    assert.match(table.stdout, /db_password\s+\(sensitive\)/);
    assert.doesNotMatch(table.stdout, /hunter2/);
    assert.deepEqual(await user.json(['stack', 'var', 'unset', stack.id, 'replicas', 'db_password']), [region]);
    assert.deepEqual(await user.json(['stack', 'var', 'list', stack.id]), [region]);
    assert.deepEqual((await user.json(['stack', 'get', stack.id])).variables, { region: 'eu-west-1' });

    assert.deepEqual(await user.json(['stack', 'state', 'list', stack.id]), []);
    assert.equal((await user.run(['stack', 'state', 'pull', stack.id])).code, 4);
    // A state version written as OpenTofu's http backend does (an API key may write, as for an import).
    const state = { version: 4, terraform_version: '1.8.0', serial: 1, lineage: 'cli-test-lineage', outputs: {}, resources: [] };
    const written = await fetch(`${plinth.baseUrl}/state-backend/${stack.serviceStateBackendWorkspace}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(state),
    });
    assert.equal(written.status, 200, await written.text());
    const versions = await user.json(['stack', 'state', 'list', stack.id]);
    assert.deepEqual(
      versions.map((v: { serial: number }) => v.serial),
      [1],
    );
    assert.deepEqual(await user.json(['stack', 'state', 'pull', stack.id]), state);
    assert.deepEqual(await user.json(['stack', 'state', 'pull', stack.id, '--state-version', versions[0].id]), state);

    assert.ok((await user.json(['pipeline', 'list'])).some((p: { id: string }) => p.id === stack.changePipelineId));
    assert.equal((await user.json(['pipeline', 'get', stack.changePipelineId])).id, stack.changePipelineId);
    assert.deepEqual(
      (await user.json(['pipeline', 'versions', stack.changePipelineId])).map((v: { version: number }) => v.version),
      [1],
    );
    const changed = path.join(dir, 'changed.json');
    writeFileSync(changed, JSON.stringify({ steps: [{ id: 'hello', name: 'Hello', type: 'script', with: { command: 'echo hello' } }] }));
    const dryRun = await user.json(['pipeline', 'validate', stack.changePipelineId, '-f', changed]);
    assert.equal(dryRun.baseVersion, 1);
    assert.deepEqual(
      dryRun.patch.map((op: { path: string; value: unknown }) => [op.path, op.value]),
      [['/steps/0/with/command', 'echo hello']],
    );

    const run = await user.json(['run', 'start', stack.id, '--wait']);
    assert.equal(run.status, 'SUCCEEDED');
    assert.equal((await user.json(['run', 'get', run.id])).id, run.id);
    assert.deepEqual(
      (await user.json(['run', 'list', '--stack', stack.id])).map((r: { id: string }) => r.id),
      [run.id],
    );
    for (const filter of [
      ['--env', env.id],
      ['--created-by', 'me'],
    ]) {
      assert.ok(
        (await user.json(['run', 'list', ...filter])).some((r: { id: string }) => r.id === run.id),
        filter.join(' '),
      );
    }
    assert.deepEqual(await user.json(['run', 'list', '--created-by', '0196a3c2e8a17b2c8d9e0f1a2b3c4d5e']), []);
    assert.deepEqual(
      (await user.json(['run', 'steps', run.id])).map((s: { stepId: string }) => s.stepId),
      ['hello'],
    );
    assert.deepEqual(
      (await user.json(['run', 'logs', run.id])).map((l: { line: string }) => l.line),
      ['hi'],
    );
    assert.equal((await user.json(['run', 'wait', run.id])).status, 'SUCCEEDED');

    const gated = await user.json(['stack', 'create', '--project', project.id, '--env', env.id, '--name', 'gated', '-f', '-'], {
      input: JSON.stringify({ change: { steps: [{ id: 'gate', name: 'Gate', type: 'approval' }] } }),
    });
    const waiting = await user.run(['run', 'start', gated.id, '--wait', '-o', 'json']);
    assert.equal(waiting.code, 6);
    const waitingRun = JSON.parse(waiting.stdout);
    assert.equal(waitingRun.status, 'WAITING_FOR_APPROVAL');
    assert.equal((await user.json(['run', 'reject', waitingRun.id])).status, 'FAILED');
    assert.equal((await user.json(['run', 'retry', waitingRun.id])).attemptEpoch, 2);
    assert.equal((await user.json(['run', 'cancel', waitingRun.id])).isCancellable, false);

    assert.equal((await user.json(['api', 'GET', '/health'])).status, 'ok');
    assert.equal((await user.json(['api', 'POST', '/projects', '-d', '-'], { input: '{"data":{"givenId":"api","name":"Via api"}}' })).data.givenId, 'api');
    assert.deepEqual(await user.json(['logout']), { context: 'default', host: plinth.baseUrl, loggedOut: true });
    assert.equal((await user.run(['whoami'])).code, 3);
    await user.json(['login', '--with-token'], { input: TOKEN });
  });

  it('bash completion offers commands, options, enum values, contexts, and the names of records from the API', async () => {
    const script = await user.run(['completion', 'bash']);
    assert.equal(script.code, 0, script.stderr);
    // The script calls `plinth` by name, as it is on a user's PATH.
    const bin = mkdtempSync(path.join(os.tmpdir(), 'plinth-bin-'));
    writeFileSync(path.join(bin, 'plinth'), `#!/bin/sh\nexec "${process.execPath}" "${PLINTH_BIN}" "$@"\n`, { mode: 0o755 });
    const complete = (...words: string[]) => {
      const probe = `${script.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _plinth; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, XDG_CONFIG_HOME: user.configHome };
      return spawnSync('bash', ['-c', probe], { encoding: 'utf8', env }).stdout.split('\n').filter(Boolean);
    };
    assert.ok(complete('plinth', 'stack', 'var', 'set', '--').includes('--value-file'));
    assert.deepEqual(complete('plinth', 'stack', 'var', 'set', 'S', 'db_password', '--value-file', ''), [], 'nothing of its own: bash offers file names');
    assert.deepEqual(complete('plinth', '--host', 'http://x', 'stack', 'var', ''), ['list', 'set', 'unset'], "an option's value is not a command");
    assert.ok(complete('plinth', 'run', 'logs', '-f', '--s').includes('--step'), '-f is --follow there, not a file');
    assert.deepEqual(complete('plinth', 'run', 'list', '--status', 'f'), ['FAILED']);
    assert.deepEqual(complete('plinth', '-o', 'y'), ['yaml']);
    assert.ok(complete('plinth', 'context', 'use', '').includes('acme'), 'context names');
    assert.ok(complete('plinth', 'stack', 'get', '').includes('site'), 'stack names, from the API');
    assert.ok(complete('plinth', 'project', 'get', 'w').includes('web'), 'project givenIds, from the API');
    assert.deepEqual(complete('plinth', 'stack', 'get', 'zzz'), []);
    // A name another member chose is offered only when the shell reads it as it is; else the record's id is.
    const evil = await user.json(['stack', 'create', '--project', 'web', '--env', 'prod', '--name', 'evil $(touch pwned) *']);
    const offered = complete('plinth', 'stack', 'get', '');
    assert.ok(offered.includes(evil.id), 'the id in place of the name');
    assert.ok(
      offered.every((word) => /^[A-Za-z0-9._:@/+=,-]+$/.test(word)),
      offered.join(' '),
    );
  });

  it('records are named by id, givenId or name; an ambiguous name lists the matches; tables show names, -o wide the ids', async () => {
    const project = await user.json(['project', 'create', '--given-id', 'names', '--name', 'Names']);
    const byGivenId = await user.json(['project', 'get', 'names']);
    assert.equal(byGivenId.id, project.id);
    assert.equal((await user.json(['project', 'get', 'Names'])).id, project.id, 'by name');
    const staging = await user.json(['env', 'create', '--project', 'names', '--given-id', 'staging', '--name', 'Staging']);
    await user.json(['env', 'create', '--project', 'names', '--given-id', 'staging2', '--name', 'Staging']);
    const stack = await user.json(['stack', 'create', '--project', 'names', '--env', 'staging', '--name', 'api-gateway']);
    assert.equal(stack.environmentId, staging.id);
    assert.equal((await user.json(['stack', 'get', 'api-gateway', '--project', 'names'])).id, stack.id);

    const ambiguous = await user.run(['env', 'get', 'Staging', '--project', 'names']);
    assert.equal(ambiguous.code, 2);
    assert.match(ambiguous.stderr, /"Staging" names 2 environments: give one's id/);
    assert.match(ambiguous.stderr, new RegExp(`\n  ${staging.id}  staging  Staging`));

    const table = await user.run(['stack', 'list', '--project', 'names']);
    assert.match(table.stdout, /^NAME +GIVEN ID +PROJECT +ENVIRONMENT +FIRST APPLIED\napi-gateway +names +staging *\n$/);
    assert.doesNotMatch(table.stdout, new RegExp(stack.id));
    const wide = await user.run(['stack', 'list', '--project', 'names', '-o', 'WIDE']);
    assert.match(wide.stdout, new RegExp(stack.id), '-o wide (any case) shows the ids');
  });

  it('lists are newest first, cut at --limit with a note, in order with --sort oldest', async () => {
    for (const n of [1, 2, 3]) await user.json(['project', 'create', '--given-id', `order${n}`, '--name', `Order ${n}`]);
    const newest = await user.json(['project', 'list', '--limit', '2']);
    assert.deepEqual(
      newest.map((p: { givenId: string }) => p.givenId),
      ['order3', 'order2'],
    );
    const oldest = await user.json(['project', 'list', '--sort', 'oldest', '--all']);
    assert.deepEqual(
      oldest.slice(-3).map((p: { givenId: string }) => p.givenId),
      ['order1', 'order2', 'order3'],
    );
    const cut = await user.run(['project', 'list', '--limit', '1']);
    assert.match(cut.stderr, /1 shown; more exist: --limit <n> or --all/);
    assert.equal((await user.run(['project', 'list', '--limit', '0'])).code, 2);
    assert.equal((await user.run(['project', 'list', '--sort', 'sideways'])).code, 2);
  });

  it('delete asks for the name to be typed back, or --yes; without a terminal it is a usage error and nothing is deleted', async () => {
    await user.json(['project', 'create', '--given-id', 'doomed', '--name', 'Doomed']);
    const refused = await user.run(['project', 'delete', 'doomed']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /needs a confirmation: standard input is not a terminal, so pass --yes/);
    assert.equal((await user.json(['project', 'get', 'doomed'])).givenId, 'doomed');
    const deleted = await user.run(['project', 'delete', 'doomed', '--yes']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stderr, /deleted project "doomed"/);
    assert.equal((await user.run(['project', 'get', 'doomed'])).code, 4);

    await user.json(['project', 'create', '--given-id', 'typed', '--name', 'Typed']);
    const mistyped = await user.run(['project', 'delete', 'typed'], { terminal: true, input: 'typo\n' });
    assert.equal(mistyped.code, 1, mistyped.stdout);
    assert.match(mistyped.stdout, /Type its name \(typed\) to go on: /);
    assert.match(mistyped.stdout, /"typo" is not "typed": nothing was deleted/);
    const typed = await user.run(['project', 'delete', 'typed'], { terminal: true, input: 'typed\n' });
    assert.equal(typed.code, 0, typed.stdout);
    assert.equal((await user.run(['project', 'get', 'typed'])).code, 4);

    const key = await user.json(['key', 'create', '--name', 'short-lived-ci']);
    assert.match(key.token, /^plk_/);
    assert.ok((await user.json(['key', 'list'])).some((k: { name: string }) => k.name === 'short-lived-ci'));
    assert.equal((await user.run(['key', 'delete', 'short-lived-ci', '--yes'])).code, 0);
    assert.equal((await user.run(['whoami'], { env: { PLINTH_TOKEN: key.token } })).code, 3, 'a deleted key is revoked');
  });

  it('help shows the global options, marks required ones and gives examples; plinth api alone prints its usage', async () => {
    const help = await user.run(['stack', 'create', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--name <name> +\(required\)/);
    assert.match(help.stdout, /Global Options:[\s\S]*--project <project>/);
    assert.match(help.stdout, /Examples:\n {2}\$ plinth stack create/);
    const api = await user.run(['api']);
    assert.equal(api.code, 2);
    assert.match(api.stderr, /missing required argument 'method'[\s\S]*Usage: plinth api \[options\] <method> <path>/);
    assert.doesNotMatch(api.stderr + api.stdout, /plinth started|PostgreSQL/, 'no server was started');
  });

  it('-o yaml prints YAML and a table has no colour when stdout is not a terminal', async () => {
    const yaml = await user.run(['whoami', '-o', 'yaml']);
    assert.equal(parseYaml(yaml.stdout).email, 'admin@localhost');
    const table = await user.run(['project', 'list'], { env: { FORCE_COLOR: '1' } });
    assert.match(table.stdout, /^GIVEN ID\s+NAME\s+CREATED\n/);
    assert.doesNotMatch(table.stdout, /\u001b\[/);
  });

  it('a table on a terminal is coloured, unless NO_COLOR is set', async () => {
    const coloured = await user.run(['project', 'list'], { terminal: true });
    assert.equal(coloured.code, 0, coloured.stdout);
    assert.match(coloured.stdout, /\u001b\[2mGIVEN ID/);
    const plain = await user.run(['project', 'list'], { terminal: true, env: { NO_COLOR: '1' } });
    assert.match(plain.stdout, /^GIVEN ID\s+NAME/m);
    assert.doesNotMatch(plain.stdout, /\u001b\[/);
  });

  it('an expired key exits 3 and says to log in again', async () => {
    // Made over HTTP, not through the CLI: a CLI start on a loaded machine could outlast a short expiry.
    const expiresAt = Date.now() + 2000;
    const res = await fetch(`${plinth.baseUrl}/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { name: 'short-lived', expiresAt: new Date(expiresAt).toISOString() } }),
    });
    assert.equal(res.status, 201);
    const { token } = (await res.json()).data;
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 100));
    const result = await user.run(['whoami'], { env: { PLINTH_TOKEN: token } });
    assert.equal(result.code, 3);
    assert.match(result.stderr, /^plinth: The credential has expired \(Auth:Credential:EXPIRED\): run plinth login\n$/);
    assert.equal(result.stdout, '');
  });

  it('exit 4 for what does not exist, 2 for a command line that means nothing', async () => {
    const missing = await user.run(['stack', 'get', 'no-such-stack']);
    assert.equal(missing.code, 4);
    assert.match(missing.stderr, /no stack with the id, givenId or name "no-such-stack"/);
    const missingId = await user.run(['stack', 'get', '0123456789abcdef0123456789abcdef']);
    assert.equal(missingId.code, 4);
    assert.match(missingId.stderr, /NOT_FOUND/);
    assert.equal((await user.run(['run', 'start'])).code, 2);
    assert.equal((await user.run(['whoami', '-o', 'xml'])).code, 2);
    assert.equal((await user.run(['run', 'start', 'x', '--var', 'novalue'])).code, 2);
    assert.equal((await user.run(['env', 'create', '--given-id', 'x', '--name', 'X'], { env: { PLINTH_PROJECT: '' } })).code, 2);
  });

  it('a flag beats its PLINTH_ variable, which beats the context', async () => {
    const unreachable = 'http://127.0.0.1:9';
    // The saved key is not sent to PLINTH_HOST's other host; a key given in PLINTH_TOKEN goes where it says.
    assert.equal((await user.run(['whoami'], { env: { PLINTH_HOST: unreachable } })).code, 9);
    const viaEnv = await user.run(['whoami'], { env: { PLINTH_HOST: unreachable, PLINTH_TOKEN: TOKEN } });
    assert.equal(viaEnv.code, 1);
    assert.match(viaEnv.stderr, /cannot reach/);
    const viaFlag = await user.run(['whoami', '--host', plinth.baseUrl], { env: { PLINTH_HOST: unreachable } });
    assert.equal(viaFlag.code, 0, viaFlag.stderr);
    const org = await user.json(['org', 'create', '--name', 'Other', '--billing-email', 'o@example.com']);
    assert.equal((await user.json(['whoami'], { env: { PLINTH_ORG: org.id } })).organizationId, org.id);
    assert.equal((await user.json(['whoami', '--org', 'Other'])).organizationId, org.id, 'an organization by name');
    assert.equal((await user.run(['whoami', '--org', 'Nobody'])).code, 4);
    const shown = await user.json(['context', 'show', '--org', 'flag-org'], { env: { PLINTH_ORG: org.id, PLINTH_PROJECT: 'env-project' } });
    assert.equal(shown.organization, 'flag-org');
    assert.equal(shown.project, 'env-project');
  });
});
