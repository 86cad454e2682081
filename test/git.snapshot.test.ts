import { gunzipSync } from 'node:zlib';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { findCodeSourceById, type CodeSourceRow } from '../src/code-sources/code-sources.repo.ts';
import { snapshotSource, type SnapshotDeps, type SnapshotSandbox } from '../src/code-sources/git-snapshot.ts';
import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import { OnDemandSandbox } from '../src/engine/sandbox/on-demand.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import { sweepStaleWorkspaces } from '../src/engine/sandbox/workspaces.ts';
import { AppError } from '../src/platform/errors.ts';
import { loadGitConfig } from '../src/platform/git-config.ts';
import { startTestApp, TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { listTarGz, type TarEntry } from './helpers/tar.ts';

const files = (entries: TarEntry[]) =>
  entries
    .filter((e) => e.type !== 'dir')
    .map((e) => e.name)
    .sort();

async function refused(promise: Promise<unknown>, status: number, code: string): Promise<AppError> {
  const error = await promise.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof AppError, String(error));
  assert.equal(error.code, code, error.message);
  assert.equal(error.status, status);
  return error;
}

describe('snapshots of a code source directory', () => {
  let t: TestApp;
  let git: GitServer;
  let cacheDir: string;
  let deps: SnapshotDeps;
  let opened = 0;
  let onDemand: OnDemandSandbox;
  const logged: string[] = [];
  let pub: CodeSourceRow;
  let priv: CodeSourceRow;
  let wrong: CodeSourceRow;

  const sourceRow = async (data: Record<string, unknown>) => {
    const res = await t.call('POST', '/code-sources', { body: { data } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return (await findCodeSourceById(t.db, res.body.data.id))!;
  };

  before(async () => {
    t = await startTestApp();
    git = await startGitServer({ tokens: ['snapshot-token-9876'] });
    cacheDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-snapshot-cache-'));
    const log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _encoding, done) {
          logged.push(String(chunk));
          done();
        },
      }),
    );
    onDemand = OnDemandSandbox.fromEnv(LOOPBACK_GIT_ENV, log);
    // Counts the workspaces opened: a refusal before any process runs opens none.
    const sandbox: SnapshotSandbox = {
      workRoot: onDemand.workRoot,
      open: () => {
        opened++;
        return onDemand.open();
      },
    };
    deps = { db: t.db, secrets: TEST_SECRETS, git: { ...loadGitConfig(LOOPBACK_GIT_ENV), cacheDir }, log, sandbox };
    pub = await sourceRow({ name: 'pub', url: git.repoUrl('public') });
    priv = await sourceRow({ name: 'priv', url: git.repoUrl('private'), authType: 'TOKEN', token: 'snapshot-token-9876' });
    wrong = await sourceRow({ name: 'wrong', url: git.repoUrl('private'), authType: 'TOKEN', token: 'wrong-token-5432' });
  });
  after(async () => {
    await onDemand.close();
    await t.close();
    await git.close();
    rmSync(cacheDir, { recursive: true, force: true });
  });

  it("a branch resolves to its head, and the archive holds exactly the directory's files, relative to it", async () => {
    const head = git.commitWith('public', 'modules', (work) => {
      mkdirSync(path.join(work, 'modules/net/sub'), { recursive: true });
      writeFileSync(path.join(work, 'modules/net/main.tf'), 'resource "net" {}\n');
      writeFileSync(path.join(work, 'modules/net/sub/vars.tf'), 'variable "cidr" {}\n');
      writeFileSync(path.join(work, 'modules/other.tf'), 'not this\n');
    });
    const snap = await snapshotSource(deps, pub, 'modules', 'modules/net');
    assert.equal(snap.commitSha, head);
    assert.ok(
      logged.some((line) => line.includes('"isolation":"namespaces"')),
      'the git processes ran isolated',
    );
    const entries = listTarGz(snap.archive);
    assert.deepEqual(files(entries), ['main.tf', 'sub/vars.tf']);
    assert.equal(entries.find((e) => e.name === 'main.tf')!.content.toString(), 'resource "net" {}\n');
    // `./modules/net/` is the same directory; an empty path is the repository's root.
    assert.deepEqual(files(listTarGz((await snapshotSource(deps, pub, 'modules', './modules//net/')).archive)), ['main.tf', 'sub/vars.tf']);
    assert.deepEqual(files(listTarGz((await snapshotSource(deps, pub, 'refs/heads/modules', '')).archive)), [
      'README.md',
      'modules/net/main.tf',
      'modules/net/sub/vars.tf',
      'modules/other.tf',
      'stacks/app/main.tf',
    ]);
  });

  it('a full commit id is a ref: that commit, whatever the branch moved to since', async () => {
    const first = git.head('public', 'main');
    git.commit('public', 'main', 'stacks/app/main.tf', '# moved on\n');
    const snap = await snapshotSource(deps, pub, first, 'stacks/app');
    assert.equal(snap.commitSha, first);
    assert.equal(
      listTarGz(snap.archive)
        .find((e) => e.name === 'main.tf')!
        .content.toString(),
      '# public main\n',
    );
    await refused(snapshotSource(deps, pub, 'f'.repeat(40), 'stacks/app'), 422, 'Git:Ref:NOT_FOUND');
  });

  it('a missing ref, a missing path and a file are refused with their codes, naming them', async () => {
    const noRef = await refused(snapshotSource(deps, pub, 'no-such-branch', ''), 422, 'Git:Ref:NOT_FOUND');
    assert.match(noRef.message, /no-such-branch/);
    const noPath = await refused(snapshotSource(deps, pub, 'main', 'stacks/nope'), 422, 'Git:Path:NOT_FOUND');
    assert.match(noPath.message, /stacks\/nope/);
    await refused(snapshotSource(deps, pub, 'main', 'README.md'), 422, 'Git:Path:NOT_A_DIRECTORY');
    await refused(snapshotSource(deps, pub, 'main', 'stacks/app/main.tf/'), 422, 'Git:Path:NOT_A_DIRECTORY');
  });

  it('a path leaving the repository and a ref that is an option are refused before any process runs', async () => {
    const before = opened;
    for (const dir of ['../x', '..', 'stacks/../../etc', '/etc', 'a/..', 'a\nb', 'a\\..\\b'])
      await refused(snapshotSource(deps, pub, 'main', dir), 422, 'Git:Path:INVALID');
    for (const ref of ['--upload-pack=touch /tmp/x', 'main:other', '+main', 'a..b', ''])
      await refused(snapshotSource(deps, pub, ref, ''), 422, 'Git:Ref:INVALID');
    assert.equal(opened, before);
  });

  it("a private repository's token fetches, and never appears in an error or a log line", async () => {
    const snap = await snapshotSource(deps, priv, 'main', 'stacks/app');
    assert.equal(snap.commitSha, git.head('private', 'main'));
    assert.deepEqual(files(listTarGz(snap.archive)), ['main.tf']);
    const error = await refused(snapshotSource(deps, wrong, 'main', 'stacks/app'), 422, 'Git:Credential:REFUSED');
    const missingRef = await refused(snapshotSource(deps, priv, 'gone', ''), 422, 'Git:Ref:NOT_FOUND');
    const seen = [JSON.stringify({ ...error, message: error.message }), JSON.stringify({ ...missingRef, message: missingRef.message }), ...logged].join('\n');
    assert.ok(logged.length > 0, 'the failures were logged');
    if (process.env.SNAPSHOT_TEST_LOG) console.log(logged.join(''));
    for (const secret of ['snapshot-token-9876', 'wrong-token-5432', Buffer.from('oauth2:wrong-token-5432').toString('base64')]) {
      assert.ok(!seen.includes(secret), `${secret} leaked`);
      assert.ok(!seen.includes(Buffer.from(`plinth:${secret}`).toString('base64')));
    }
  });

  it('an archive past PLINTH_MODULE_ARCHIVE_MAX_BYTES is refused', async () => {
    git.commitWith('public', 'big', (work) => {
      mkdirSync(path.join(work, 'big'));
      writeFileSync(path.join(work, 'big/blob.bin'), randomBytes(256 * 1024));
    });
    const small = { ...deps, git: { ...deps.git, snapshotMaxBytes: 64 * 1024 } };
    const error = await refused(snapshotSource(small, pub, 'big', 'big'), 422, 'Git:Archive:TOO_LARGE');
    assert.match(error.message, /PLINTH_MODULE_ARCHIVE_MAX_BYTES/);
    // The same bound lets a small directory of the same commit through.
    assert.deepEqual(files(listTarGz((await snapshotSource(small, pub, 'big', 'stacks/app')).archive)), ['main.tf']);
  });

  it('a cache past PLINTH_GIT_CACHE_MAX_BYTES when a fetch starts is emptied first, and the fetch goes on', async () => {
    const bounded = { ...deps, git: { ...deps.git, cacheMaxBytes: 256 * 1024 } };
    const cache = path.join(cacheDir, pub.id);
    await snapshotSource(deps, pub, 'main', 'stacks/app');
    writeFileSync(path.join(cache, 'objects/pack/grown.pack'), randomBytes(512 * 1024));
    assert.deepEqual(files(listTarGz((await snapshotSource(bounded, pub, 'main', 'stacks/app')).archive)), ['main.tf']);
    assert.equal(existsSync(path.join(cache, 'objects/pack/grown.pack')), false);
  });

  it('a fetch whose pack is past PLINTH_GIT_CACHE_MAX_BYTES is cut and refused, and leaves nothing of it in the cache', async () => {
    git.commitWith('public', 'huge', (work) => writeFileSync(path.join(work, 'huge.bin'), randomBytes(1024 * 1024)));
    const bounded = { ...deps, git: { ...deps.git, cacheMaxBytes: 256 * 1024 } };
    const error = await refused(snapshotSource(bounded, pub, 'huge', ''), 422, 'Git:Fetch:TOO_LARGE');
    assert.match(error.message, /PLINTH_GIT_CACHE_MAX_BYTES/);
    const packs = path.join(cacheDir, pub.id, 'objects/pack');
    const cut = readdirSync(packs).filter((name) => name.startsWith('tmp_'));
    assert.ok(cut.length >= 1, 'the cut pack is left where git wrote it');
    for (const name of cut) assert.ok(statSync(path.join(packs, name)).size <= 256 * 1024, 'and it is no larger than the bound');
    // The cut file put the cache past the bound: the next fetch empties it first, then fetches.
    assert.deepEqual(files(listTarGz((await snapshotSource(bounded, pub, 'main', 'stacks/app')).archive)), ['main.tf']);
    assert.deepEqual(
      readdirSync(packs).filter((name) => name.startsWith('tmp_')),
      [],
    );
    // What an interrupted fetch leaves, well within the bound, goes before the next fetch.
    writeFileSync(path.join(packs, 'tmp_pack_interrupted'), randomBytes(1024));
    await snapshotSource(deps, pub, 'dev', 'stacks/app');
    assert.equal(existsSync(path.join(packs, 'tmp_pack_interrupted')), false);
  });

  it('a hostile repository cannot make the host read outside it: links stay links in the archive', async () => {
    git.commitWith('public', 'hostile', (work) => {
      mkdirSync(path.join(work, 'mod'));
      writeFileSync(path.join(work, 'mod/main.tf'), 'ok\n');
      symlinkSync('/etc/passwd', path.join(work, 'mod/passwd'));
      symlinkSync('../../../../../../', path.join(work, 'mod/up'));
      symlinkSync('/etc', path.join(work, 'escape'));
      symlinkSync('mod', path.join(work, 'alias'));
    });
    const snap = await snapshotSource(deps, pub, 'hostile', 'mod');
    const entries = listTarGz(snap.archive);
    assert.deepEqual(entries.map((e) => [e.name, e.type, e.linkName]).sort(), [
      ['main.tf', 'file', ''],
      ['passwd', 'symlink', '/etc/passwd'],
      ['up', 'symlink', '../../../../../../'],
    ]);
    assert.ok(!gunzipSync(snap.archive).includes('root:x:0:0'), "no host file's content");
    await refused(snapshotSource(deps, pub, 'hostile', 'escape'), 422, 'Git:Path:NOT_A_DIRECTORY');
    await refused(snapshotSource(deps, pub, 'hostile', 'alias'), 422, 'Git:Path:NOT_A_DIRECTORY');
    await refused(snapshotSource(deps, pub, 'hostile', 'escape/passwd'), 422, 'Git:Path:NOT_FOUND');
    await refused(snapshotSource(deps, pub, 'hostile', 'mod/up/etc'), 422, 'Git:Path:NOT_FOUND');
  });

  it('a fetch past PLINTH_GIT_FETCH_TIMEOUT_MS is a 504', async () => {
    git.delayMs = 3_000;
    try {
      const slow = { ...deps, git: { ...deps.git, fetchTimeoutMs: 500 } };
      await refused(snapshotSource(slow, pub, 'dev', ''), 504, 'Git:Fetch:TIMEOUT');
    } finally {
      git.delayMs = 0;
    }
  });

  it('an unreachable server is a 502', async () => {
    const down = await sourceRow({ name: 'down', url: 'http://127.0.0.1:9/nothing.git' });
    await refused(snapshotSource(deps, down, 'main', ''), 502, 'Git:Fetch:FAILED');
  });
});

describe("the API process's sandbox", () => {
  const silent = pino({ level: 'silent' });

  it('is made once for concurrent first uses; where the host cannot isolate, a snapshot is a 503 and runs nothing', async () => {
    let made = 0;
    const settings = { ...loadSandboxSettings({}, undefined, 0), poolSize: 0 };
    const sandbox = new OnDemandSandbox(settings, silent, (s) => {
      made++;
      return new NamespaceSandbox(s, async () => 'no namespaces on this test host');
    });
    const deps: SnapshotDeps = {
      db: undefined as never,
      secrets: TEST_SECRETS,
      git: loadGitConfig({}),
      log: silent,
      sandbox,
    };
    const source = { id: 'src_x', url: 'http://127.0.0.1:9/x.git', auth_type: 'NONE' } as CodeSourceRow;
    const [a, b] = await Promise.all([
      refused(snapshotSource(deps, source, 'main', ''), 503, 'Git:Sandbox:UNAVAILABLE'),
      refused(snapshotSource(deps, source, 'main', ''), 503, 'Git:Sandbox:UNAVAILABLE'),
    ]);
    assert.match(a.message, /no namespaces on this test host.*PLINTH_SANDBOX=off/);
    assert.equal(b.message, a.message);
    assert.equal(made, 1);
  });

  it('a sandbox that fails to start is a 503 that names nothing of the host; the cause goes to the log', async () => {
    let logged = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logged += chunk;
        done();
      },
    });
    const log = pino({ level: 'error' }, sink);
    const settings = { ...loadSandboxSettings({ PLINTH_SANDBOX: 'namespaces' }, undefined, 0), poolSize: 0 };
    const sandbox = new OnDemandSandbox(settings, log, (s) => new NamespaceSandbox(s, async () => 'unshare failed under /srv/host-secret/bin'));
    const deps: SnapshotDeps = { db: undefined as never, secrets: TEST_SECRETS, git: loadGitConfig({}), log, sandbox };
    const source = { id: 'src_y', url: 'http://127.0.0.1:9/y.git', auth_type: 'NONE' } as CodeSourceRow;
    const error = await refused(snapshotSource(deps, source, 'main', ''), 503, 'Git:Sandbox:UNAVAILABLE');
    assert.doesNotMatch(error.message, /host-secret/);
    const line = JSON.parse(logged);
    assert.equal(line.msg, 'cannot start the sandbox of git processes');
    assert.match(line.err.message, /unshare failed under \/srv\/host-secret\/bin/);
  });

  it('with PLINTH_SANDBOX=off (the single-tenant opt-out) snapshots run unisolated', async () => {
    const git = await startGitServer();
    const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-snapshot-off-'));
    const sandbox = OnDemandSandbox.fromEnv({ PLINTH_SANDBOX: 'off' }, silent);
    try {
      const deps: SnapshotDeps = { db: undefined as never, secrets: TEST_SECRETS, git: { ...loadGitConfig({}), cacheDir }, log: silent, sandbox };
      const source = { id: 'src_off', url: git.repoUrl('public'), auth_type: 'NONE' } as CodeSourceRow;
      const snap = await snapshotSource(deps, source, 'main', 'stacks/app');
      assert.equal(snap.commitSha, git.head('public', 'main'));
      assert.deepEqual(files(listTarGz(snap.archive)), ['main.tf']);
    } finally {
      await sandbox.close();
      await git.close();
      rmSync(cacheDir, { recursive: true, force: true });
    }
  });

  it("leaves a live process's claims alone when it sweeps, and removes a dead one's", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'plinth-sweep-'));
    const other = spawn('sleep', ['30']);
    try {
      const claim = (uid: number, owner: number) => {
        const dir = path.join(root, String(uid));
        mkdirSync(path.join(dir, 'workspace'), { recursive: true });
        writeFileSync(path.join(dir, 'owner'), String(owner));
        const old = new Date(Date.now() - 120_000);
        utimesSync(dir, old, old);
        return dir;
      };
      const live = claim(200_001, other.pid!);
      const own = claim(200_002, process.pid);
      const dead = claim(200_003, 2 ** 22 + 1);
      assert.equal(await sweepStaleWorkspaces(root, 200_000, 50_000), 1);
      assert.ok(existsSync(live) && existsSync(own));
      assert.ok(!existsSync(dead));
    } finally {
      other.kill();
      await once(other, 'close');
      rmSync(root, { recursive: true, force: true });
    }
  });
});
