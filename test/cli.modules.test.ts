import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify as toYaml } from 'yaml';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { cliUser, type CliUser } from './helpers/cli.ts';
import { FAST_ENGINE_ENV, LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, MODULES } from './helpers/modules.ts';
import { PLINTH_BIN, startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

// The API's snapshots reach the tests' Git server on loopback, as an operator would allow a self-hosted one.
Object.assign(process.env, LOOPBACK_GIT_ENV);

const TOKEN = 'plk_cli_modules_test_token_0123456789abcdefghijklmnop';
const REF_TO_NET = '{"$ref":{"instance":"net","output":"vpc_id"}}';

describe('plinth module and instance commands', () => {
  let database: TestDatabase;
  let git: GitServer;
  let commit: string;
  let plinth: PlinthProcess;
  let user: CliUser;
  let dir: string;

  /** A file in the test's directory. */
  const file = (name: string, content: string) => {
    const at = path.join(dir, name);
    writeFileSync(at, content);
    return at;
  };

  before(async () => {
    database = await createTestDatabase();
    git = await startGitServer();
    commit = commitModules(git);
    dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-cli-modules-'));
    plinth = await startPlinthProcess(
      // No OpenTofu: a destroy run fails at its first tofu command, wherever the test runs.
      { ...FAST_ENGINE_ENV, DATABASE_URL: database.url, PLINTH_ADMIN_TOKEN: TOKEN, PLINTH_DATA_DIR: dir, PLINTH_TOFU_BIN: 'no-such-tofu' },
      { readyTimeoutMs: 120_000 },
    );
    user = cliUser({ PLINTH_PROJECT: 'mods' });
    await user.json(['login', '--host', plinth.baseUrl, '--with-token'], { input: TOKEN });
    await user.json(['project', 'create', '--given-id', 'mods', '--name', 'Modules']);
    await user.json(['env', 'create', '--given-id', 'prod', '--name', 'Production']);
    await user.json(['api', 'POST', '/code-sources', '-d', '-'], { input: JSON.stringify({ data: { name: 'modules', url: git.repoUrl('public') } }) });
  });
  after(async () => {
    await plinth?.stop();
    await git?.close();
    await database?.drop();
  });

  it('creates a definition, finds it by type or name, and publishes versions from files and standard input', async () => {
    const created = await user.json(['module', 'create', '--type', 'aws/network', '--name', 'network', '--description', 'A VPC']);
    assert.equal(created.status, 'DRAFT');
    assert.equal((await user.json(['module', 'get', 'aws/network'])).id, created.id, 'by type');
    assert.equal((await user.json(['module', 'get', 'network'])).id, created.id, 'by name');
    assert.deepEqual(
      (await user.json(['module', 'list', '--status', 'draft'])).map((d: { id: string }) => d.id),
      [created.id],
    );
    const table = await user.run(['module', 'list', '--type', 'aws/network']);
    assert.match(table.stdout, /^TYPE +NAME +STATUS +LATEST +GLOBAL\naws\/network +network +DRAFT *\n$/);
    assert.match((await user.run(['module', 'list', '-o', 'wide'])).stdout, new RegExp(created.id));
    assert.equal((await user.json(['module', 'update', 'aws/network', '--description', 'A VPC and its subnets'])).description, 'A VPC and its subnets');

    const inputs = file('network-inputs.yaml', toYaml(MODULES.network.inputs));
    const outputs = file('network-outputs.json', JSON.stringify(MODULES.network.outputs));
    const changelog = file('CHANGELOG.md', '# 1.0.0\n\nFirst.\n');
    const publish = (version: string, ...more: string[]) =>
      user.json([
        'module',
        'publish',
        'network',
        '--version',
        version,
        '--code-source',
        'modules',
        '--ref',
        'main',
        '--path',
        MODULES.network.path,
        '--inputs',
        inputs,
        '--outputs',
        outputs,
        ...more,
      ]);
    const first = await publish('1.0.0', '--changelog-file', changelog);
    assert.deepEqual(first.source, { codeSourceId: first.source.codeSourceId, ref: 'main', commitSha: commit, path: 'modules/network' });
    assert.equal(first.changelog, '# 1.0.0\n\nFirst.\n');
    assert.deepEqual(
      first.inputs.map((i: { id: string }) => i.id),
      ['name', 'cidr'],
    );
    assert.deepEqual(
      first.outputs.map((o: { name: string }) => o.name),
      ['vpc_id', 'subnet_ids'],
    );
    await publish('1.1.0', '--changelog', 'Second');
    const third = await publish('1.2.0');
    const defined = await user.json(['module', 'get', 'aws/network']);
    assert.equal(defined.status, 'ACTIVE');
    assert.equal(defined.latestVersion, '1.2.0');
    assert.deepEqual(
      (await user.json(['module', 'versions', 'aws/network'])).map((v: { version: string }) => v.version),
      ['1.2.0', '1.1.0', '1.0.0'],
    );
    const deprecated = await user.json(['module', 'deprecate', 'aws/network@1.2.0', '--message', 'use 1.1.0']);
    assert.equal(deprecated.id, third.id);
    assert.equal(deprecated.deprecationMessage, 'use 1.1.0');
    assert.match((await user.run(['module', 'versions', 'aws/network'])).stdout, /\n1\.2\.0 +main +[0-9a-f]{12} +use 1\.1\.0 /);

    await user.json(['module', 'create', '--type', 'aws/database', '--name', 'database']);
    const database = await user.json(
      [
        'module',
        'publish',
        'aws/database',
        '--version',
        '1.0.0',
        '--code-source',
        'modules',
        '--ref',
        'main',
        '--path',
        MODULES.database.path,
        '--inputs',
        '-',
      ],
      { input: JSON.stringify(MODULES.database.inputs) },
    );
    assert.deepEqual(database.outputs, []);

    const twice = await user.run([
      'module',
      'publish',
      'network',
      '--version',
      '2.0.0',
      '--code-source',
      'modules',
      '--ref',
      'main',
      '--inputs',
      '-',
      '--outputs',
      '-',
    ]);
    assert.equal(twice.code, 2);
    assert.match(twice.stderr, /only one of --inputs, --outputs can read standard input/);
    const notAList = await user.run(['module', 'publish', 'network', '--version', '2.0.0', '--code-source', 'modules', '--ref', 'main', '--inputs', changelog]);
    assert.equal(notAList.code, 2);
  });

  it('creates instances with --set and a reference, updates, upgrades, draws the graph and deletes them', async () => {
    const net = await user.json(['instance', 'create', 'net', '--env', 'prod', '--module', 'aws/network', '--version', '1.0.0', '--set', 'name=main']);
    assert.equal(net.version, '1.0.0');
    assert.equal(net.name, 'net', 'the name defaults to the givenId');
    assert.deepEqual(net.values, { name: 'main' });
    const deprecated = await user.run(['instance', 'create', 'net2', '--env', 'prod', '--module', 'aws/network', '--set', 'name=other']);
    assert.equal(deprecated.code, 1, 'the latest, 1.2.0, is deprecated');
    assert.match(deprecated.stderr, /deprecated: use 1\.1\.0/);

    const values = file('db.yaml', 'size: large\nsubnet: subnet-a\n');
    const db = await user.json([
      'instance',
      'create',
      'db',
      '--env',
      'prod',
      '--module',
      'database',
      '--name',
      'Main database',
      '--values',
      values,
      '--set',
      `vpc_id=${REF_TO_NET}`,
      '--set',
      'subnet=subnet-b',
    ]);
    assert.deepEqual(db.values, { size: 'large', subnet: 'subnet-b', vpc_id: JSON.parse(REF_TO_NET) });
    assert.equal(db.references[0].producerInstanceId, net.id);
    assert.deepEqual(
      (await user.json(['instance', 'list', '--env', 'prod'])).map((i: { givenId: string }) => i.givenId),
      ['db', 'net'],
    );
    const table = await user.run(['instance', 'list', '--env', 'prod']);
    assert.match(
      table.stdout,
      /^GIVEN ID +NAME +MODULE +VERSION +ENVIRONMENT +APPLIED\ndb +Main database +aws\/database +1\.0\.0 +prod *\nnet +net +aws\/network +1\.0\.0 +prod *\n$/,
    );
    assert.doesNotMatch(table.stdout, new RegExp(db.id));
    assert.match((await user.run(['instance', 'list', '--env', 'prod', '-o', 'wide'])).stdout, new RegExp(db.id));
    assert.equal((await user.json(['instance', 'get', 'db', '--env', 'prod'])).id, db.id);
    assert.equal((await user.json(['instance', 'get', 'Main database'])).id, db.id, 'by name, in the whole organization');
    const shown = await user.run(['instance', 'get', 'db', '--env', 'prod']);
    assert.match(shown.stdout, /^givenId +db\nname +Main database\nmodule +aws\/database\nversion +1\.0\.0\nproject +mods\nenvironment +prod\n\n/);
    assert.match(shown.stdout, /\nINPUT +VALUE +FROM\nvpc_id +\{"\$ref":\{.*\}\} +VALUE\nsubnet +subnet-b +VALUE\nsize +large +VALUE\n/);
    assert.doesNotMatch(shown.stdout, new RegExp(db.id), 'ids are for -o wide');
    assert.match((await user.run(['instance', 'get', 'db', '--env', 'prod', '-o', 'wide'])).stdout, new RegExp(`^id +${db.id}\n`));
    assert.match(shown.stdout, /! \/vpc_id: .*\(OUTPUT_NOT_APPLIED\)/);

    const updated = await user.json(['instance', 'update', 'db', '--env', 'prod', '--set', 'size=small']);
    assert.deepEqual(updated.values, { size: 'small', subnet: 'subnet-b', vpc_id: JSON.parse(REF_TO_NET) }, '--set alone changes the current values');
    const unset = await user.json(['instance', 'update', 'db', '--env', 'prod', '--unset', 'subnet', '--name', 'DB']);
    assert.deepEqual(unset.values, { size: 'small', vpc_id: JSON.parse(REF_TO_NET) });
    assert.equal(unset.name, 'DB');
    assert.equal((await user.run(['instance', 'update', 'db', '--env', 'prod'])).code, 2, 'nothing to change');

    const upgraded = await user.json(['instance', 'upgrade', 'net', '--env', 'prod', '--version', '1.1.0']);
    assert.equal(upgraded.version, '1.1.0');
    assert.deepEqual(upgraded.values, { name: 'main' }, 'the values carry over');
    assert.equal((await user.run(['instance', 'upgrade', 'net', '--env', 'prod', '--version', '9.9.9'])).code, 4);

    const graph = await user.json(['env', 'graph', 'prod']);
    assert.deepEqual(graph.nodes.map((n: { givenId: string }) => n.givenId).sort(), ['db', 'net']);
    assert.deepEqual(
      graph.edges.map((e: { source: string; target: string; consumedFields: string[] }) => [e.source, e.target, e.consumedFields]),
      [[net.id, db.id, ['vpc_id']]],
    );
    const drawn = await user.run(['env', 'graph', 'prod']);
    assert.equal(drawn.code, 0, drawn.stderr);
    assert.match(drawn.stdout, /^INSTANCE +NAME +MODULE +VERSION\n/);
    assert.match(drawn.stdout, /\nreferences:\n {2}net --vpc_id--> db\n {4}! .*\(OUTPUT_NOT_APPLIED\)\n/);

    const inUse = await user.run(['instance', 'delete', 'net', '--env', 'prod', '--yes']);
    assert.equal(inUse.code, 1);
    assert.match(inUse.stderr, /has consumers.*\(Api:ModuleInstance:IN_USE\)\n {2}module instances: db\n/);
    const unconfirmed = await user.run(['instance', 'delete', 'db', '--env', 'prod']);
    assert.equal(unconfirmed.code, 2, 'no terminal to type the name on');
    const deleted = await user.run(['instance', 'delete', 'db', '--env', 'prod', '--yes']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stderr, new RegExp(`deleted module instance "db" \\(${db.id}\\)`));
    assert.equal((await user.run(['instance', 'get', 'db', '--env', 'prod'])).code, 4);
    assert.match((await user.run(['env', 'graph', 'prod'])).stdout, /^INSTANCE +NAME +MODULE +VERSION\nnet +net +aws\/network +1\.1\.0 *\n$/);
  });

  it('prints every problem of values the version refuses, one line each', async () => {
    const refused = await user.run(['instance', 'create', 'bad', '--env', 'prod', '--module', 'aws/database', '--set', 'size=huge', '--set', 'subnet=5']);
    assert.equal(refused.code, 1);
    assert.equal(
      refused.stderr,
      'plinth: The values do not fit module version 1.0.0 (Api:ModuleInstance:INVALID_INPUTS)\n' +
        '  /data/values/vpc_id (Network): is required\n' +
        '  /data/values/subnet (Subnet): must be a string\n' +
        '  /data/values/size (Size): must be one of "small", "large"\n',
    );
    assert.equal((await user.run(['instance', 'get', 'bad'])).code, 4, 'nothing was created');
  });

  it('a delete that must destroy resources first names the destroy run, and --wait waits for it', async () => {
    const doomed = await user.json(['instance', 'create', 'doomed', '--env', 'prod', '--module', 'aws/network', '--version', '1.1.0', '--set', 'name=doomed']);
    const stack = await user.json(['stack', 'get', doomed.stackId]);
    // A state holding a resource, written as OpenTofu's http backend does: the instance cannot go at once.
    const state = {
      version: 4,
      terraform_version: '1.8.0',
      serial: 1,
      lineage: 'cli-modules-lineage',
      outputs: {},
      resources: [
        { mode: 'managed', type: 'terraform_data', name: 'vpc', provider: 'provider["terraform.io/builtin/terraform"]', instances: [{ attributes: {} }] },
      ],
    };
    const written = await fetch(`${plinth.baseUrl}/state-backend/${stack.serviceStateBackendWorkspace}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(state),
    });
    assert.equal(written.status, 200, await written.text());

    const started = await user.run(['instance', 'delete', 'doomed', '--env', 'prod', '--yes', '-o', 'json']);
    assert.equal(started.code, 0, started.stderr);
    const deleting = JSON.parse(started.stdout);
    assert.match(deleting.deletingRunId, /^[0-9a-f]{32}$/);
    assert.match(started.stderr, new RegExp(`destroy run ${deleting.deletingRunId} started: module instance "doomed" is deleted once it succeeds`));
    // This installation has no OpenTofu, so the destroy run fails and the instance stays; why is said.
    const waited = await user.run(['instance', 'delete', 'doomed', '--env', 'prod', '--yes', '--wait', '--timeout', '120s'], { timeoutMs: 150_000 });
    assert.equal(waited.code, 5, waited.stderr);
    // The first run, or a second one when the first had failed already: a delete replaces a finished run.
    assert.match(waited.stderr, /destroy run [0-9a-f]{32} FAILED: module instance "doomed" is kept\n/);
    assert.match(waited.stderr, /step "plan" \(opentofu\.plan\) failed: OpenTofu:Command:FAILED\n/);
    assert.equal((await user.json(['instance', 'get', 'doomed', '--env', 'prod'])).id, doomed.id);
  });

  it('bash completion offers the definition statuses of module list, and definitions and instances by name', async () => {
    const script = await user.run(['completion', 'bash']);
    const bin = mkdtempSync(path.join(os.tmpdir(), 'plinth-bin-'));
    writeFileSync(path.join(bin, 'plinth'), `#!/bin/sh\nexec "${process.execPath}" "${PLINTH_BIN}" "$@"\n`, { mode: 0o755 });
    const complete = (...words: string[]) => {
      const probe = `${script.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _plinth; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, XDG_CONFIG_HOME: user.configHome };
      return spawnSync('bash', ['-c', probe], { encoding: 'utf8', env }).stdout.split('\n').filter(Boolean);
    };
    assert.deepEqual(complete('plinth', 'module', 'list', '--status', ''), ['DRAFT', 'ACTIVE']);
    assert.deepEqual(complete('plinth', 'run', 'list', '--status', 'f'), ['FAILED'], 'run statuses elsewhere');
    assert.deepEqual(complete('plinth', 'module', 'get', 'aws/n'), ['aws/network']);
    assert.deepEqual(complete('plinth', 'instance', 'create', 'x', '--module', 'aws/d'), ['aws/database']);
    assert.ok(complete('plinth', 'instance', 'get', '').includes('net'));
    assert.ok(complete('plinth', 'module', '').includes('publish'));
  });
});
