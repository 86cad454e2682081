import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOTLESS } from './helpers/sandbox.ts';

/** The normal user the rootless run is made as: created once per host, with no home and no login. */
const USER = 'plinth-rootless-test';
/** The suites that say what a sandbox guarantees: run again here, rootless, whole. */
const SUITES = ['test/sandbox.hostile.test.ts', 'test/sandbox.signals.test.ts'];
const REPO = path.resolve(import.meta.dirname, '..');

function ensureUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, USER], { encoding: 'utf8' }).trim());
  if (spawnSync('id', ['-u', USER]).status !== 0) {
    execFileSync('useradd', ['--system', '--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', USER]);
  }
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * The repository as the user can read it: in place when it can, else a copy of its files (hard links
 * where the file system allows), since a checkout under a private directory is out of a
 * normal user's reach.
 */
function readableRepository(user: { uid: number; gid: number }, scratch: string): string {
  const probe = spawnSync(process.execPath, ['-e', 'require("fs").accessSync(process.argv[1], 4)', path.join(REPO, 'node_modules', 'tsx', 'package.json')], {
    ...user,
    cwd: '/',
  });
  if (probe.status === 0) return REPO;
  const copy = path.join(scratch, 'repo');
  const parts = readdirSync(REPO)
    .filter((name) => name !== '.git')
    .map((name) => path.join(REPO, name));
  execFileSync('mkdir', ['-m', '755', copy]);
  if (spawnSync('cp', ['-al', ...parts, copy]).status !== 0) execFileSync('cp', ['-a', ...parts, copy]);
  return copy;
}

/**
 * CI runs as root, where every other sandbox test runs its steps as root would. This file makes a
 * normal user and runs the hostile-step and signal suites again as that user, so each guarantee is
 * proven of rootless sandboxes too. Run as a normal user, those suites are rootless already.
 */
describe('rootless sandboxes: the hostile-step and signal suites, as a normal user', {
  skip: ROOTLESS && 'this run is rootless already: the suites themselves prove it',
}, () => {
  let scratch: string;
  before(() => {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'plinth-rootless-'));
    chmodSync(scratch, 0o755);
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('every test of both suites passes with the worker and its steps run by a normal user', { timeout: 600_000 }, async () => {
    const user = ensureUser();
    const home = path.join(scratch, 'home');
    execFileSync('mkdir', ['-m', '700', home]);
    chownSync(home, user.uid, user.gid);
    const cwd = readableRepository(user, scratch);
    // Without the runner's own marker, which would make the child skip its files as a nested run.
    const { NODE_TEST_CONTEXT: _nested, ...env } = process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...SUITES], {
      cwd,
      ...user,
      env: { ...env, HOME: home, USER, LOGNAME: USER },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(code, 0, `the rootless run failed:\n${output.slice(-8_000)}`);
    assert.match(output, /ℹ fail 0/, output.slice(-2_000));
    assert.doesNotMatch(output, /ℹ pass 0\b/, 'the suites ran their tests');
  });
});
