import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { cliUser, type CliUser } from './helpers/cli.ts';
import { FAST_ENGINE_ENV, LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, MODULES } from './helpers/modules.ts';
import { STANDIN } from './helpers/opentofu.ts';
import { startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

const TOKEN = 'plk_cli_deploy_test_token_0123456789abcdefghijklmnopq';

describe('plinth env deploy: a chain of module instances from a real repository, with the OpenTofu stand-in', () => {
  let database: TestDatabase;
  let git: GitServer;
  let plinth: PlinthProcess;
  let user: CliUser;
  let dir: string;

  before(async () => {
    database = await createTestDatabase();
    git = await startGitServer();
    commitModules(git);
    dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-cli-deploy-'));
    plinth = await startPlinthProcess(
      { ...FAST_ENGINE_ENV, ...LOOPBACK_GIT_ENV, DATABASE_URL: database.url, PLINTH_ADMIN_TOKEN: TOKEN, PLINTH_DATA_DIR: dir, PLINTH_TOFU_BIN: STANDIN },
      { readyTimeoutMs: 120_000 },
    );
    user = cliUser({ PLINTH_PROJECT: 'shop' });
    await user.json(['login', '--host', plinth.baseUrl, '--with-token'], { input: TOKEN });
    await user.json(['project', 'create', '--given-id', 'shop', '--name', 'Shop']);
    await user.json(['env', 'create', '--given-id', 'prod', '--name', 'Production']);
    await user.json(['api', 'POST', '/code-sources', '-d', '-'], { input: JSON.stringify({ data: { name: 'modules', url: git.repoUrl('public') } }) });
    for (const name of ['network', 'database', 'service'] as const) {
      const m = MODULES[name];
      const inputs = path.join(dir, `${name}-inputs.json`);
      const outputs = path.join(dir, `${name}-outputs.json`);
      writeFileSync(inputs, JSON.stringify(m.inputs));
      writeFileSync(outputs, JSON.stringify(m.outputs));
      await user.json(['module', 'create', '--type', m.type, '--name', name]);
      await user.json([
        'module',
        'publish',
        m.type,
        '--version',
        '1.0.0',
        '--code-source',
        'modules',
        '--ref',
        'main',
        '--path',
        m.path,
        '--inputs',
        inputs,
        '--outputs',
        outputs,
      ]);
    }
  });
  after(async () => {
    await plinth?.stop();
    await git?.close();
    await database?.drop();
  });

  it('deploys network, database and service in order, each receiving the outputs before it', async () => {
    await user.json(['instance', 'create', 'net', '--env', 'prod', '--module', 'aws/network', '--set', 'name=main']);
    await user.json([
      'instance',
      'create',
      'db',
      '--env',
      'prod',
      '--module',
      'aws/database',
      '--set',
      'vpc_id={"$ref":{"instance":"net","output":"vpc_id"}}',
      '--set',
      'subnet={"$ref":{"instance":"net","output":"subnet_ids","path":"/0"}}',
    ]);
    await user.json([
      'instance',
      'create',
      'svc',
      '--env',
      'prod',
      '--module',
      'aws/service',
      '--set',
      'endpoint={"$ref":{"instance":"db","output":"endpoint"}}',
    ]);
    const deployed = await user.run(['env', 'deploy', 'prod', '--auto-approve', '--wait', '--timeout', '5m']);
    assert.equal(deployed.code, 0, deployed.stderr);
    assert.match(
      deployed.stdout,
      /^INSTANCE +RUN +STATE\nnet .*\ndb .*Waiting for module instance net to finish deploying.*\nsvc .*Waiting for module instance db to finish deploying/,
    );
    assert.match(deployed.stderr, /net: run \w+ SUCCEEDED\ndb: run \w+ SUCCEEDED\nsvc: run \w+ SUCCEEDED/);
    const svc = await user.json(['instance', 'get', 'svc', '--env', 'prod']);
    const stack = await user.json(['stack', 'get', svc.stackId]);
    assert.deepEqual(stack.output, { url: 'https://db.vpc-main' });
    const graph = await user.run(['env', 'graph', 'prod']);
    assert.match(graph.stdout, /references:\n(?: {2}\S+ --\S+--> \S+\n){3}$/);
    assert.doesNotMatch(graph.stdout, /!/);
    const again = await user.run(['env', 'deploy', 'prod']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /unchanged: net, db, svc/);
  });
});
