import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { GitCacheSweeper } from '../src/code-sources/git-cache-sweep.ts';
import { sourceCacheDir } from '../src/code-sources/git-fetch.ts';
import { loadGitConfig } from '../src/platform/git-config.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

const HOUR = 3_600_000;

function endGroup(holder: ChildProcess): void {
  try {
    process.kill(-holder.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}

describe('the sweep of Git caches', () => {
  let t: TestApp;
  let root: string;
  let outside: string;
  const git = { ...loadGitConfig({}), cacheIdleHours: 24 };
  const holders: ChildProcess[] = [];

  before(async () => {
    t = await startTestApp();
    root = mkdtempSync(path.join(os.tmpdir(), 'plinth-cache-sweep-'));
    outside = mkdtempSync(path.join(os.tmpdir(), 'plinth-cache-outside-'));
    git.cacheDir = root;
  });
  after(async () => {
    for (const holder of holders) endGroup(holder);
    await t.close();
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  const codeSource = async (name: string) =>
    (await t.call('POST', '/code-sources', { body: { data: { name, url: 'https://git.example.com/r.git' } } })).body.data.id as string;

  /** A cache as a fetch leaves it: a few files, the directory last used `ageMs` ago. */
  const cache = (id: string, { ageMs = 0 } = {}) => {
    const dir = path.join(root, id);
    mkdirSync(path.join(dir, 'objects/pack'), { recursive: true });
    writeFileSync(path.join(dir, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(path.join(dir, 'objects/pack/pack-1.pack'), Buffer.alloc(1024, 1));
    const at = new Date(Date.now() - ageMs);
    utimesSync(dir, at, at);
    return dir;
  };

  /** Holds the lock every fetch takes on a cache, as a fetch in progress does. */
  const holdLock = async (dir: string) => {
    // Its own process group: the command flock runs holds the lock too, and both must end to free it.
    const holder = spawn('flock', [dir, 'sh', '-c', 'echo held; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    holders.push(holder);
    await once(holder.stdout!, 'data');
    return holder;
  };

  it("empties a deleted source's cache and an idle one; leaves the rest, and a cache a fetch holds", async () => {
    const [fresh, idle, busy, used] = [await codeSource('fresh'), await codeSource('idle'), await codeSource('busy'), await codeSource('used')];
    const [deleted, deletedInUse] = ['a'.repeat(32), 'b'.repeat(32)];
    cache(fresh);
    cache(deleted, { ageMs: 2 * HOUR });
    // Used within the hour, as by an installation that shares the work root against the docs.
    cache(deletedInUse, { ageMs: HOUR / 2 });
    cache(idle, { ageMs: 25 * HOUR });
    const busyDir = cache(busy, { ageMs: 25 * HOUR });
    cache(used, { ageMs: 25 * HOUR });
    // A use marks its cache before any process of it starts.
    await sourceCacheDir(git, undefined, used);
    // A link to the host's files is removed as a link, never followed.
    symlinkSync(outside, path.join(root, idle, 'objects/escape'));
    writeFileSync(path.join(outside, 'keep.txt'), 'the host file');
    // What is not a source's cache is not the sweep's.
    writeFileSync(path.join(root, 'notes.txt'), 'not a cache');
    mkdirSync(path.join(root, '.hidden'));
    const holder = await holdLock(busyDir);

    const log: string[] = [];
    const sweeper = new GitCacheSweeper(t.db, git, undefined, pino({ level: 'info' }, { write: (line: string) => log.push(line) }));
    const swept = await sweeper.sweepOnce();
    assert.deepEqual(
      swept.map(({ codeSourceId, reason }) => ({ codeSourceId, reason })).sort((a, b) => a.codeSourceId.localeCompare(b.codeSourceId)),
      [
        { codeSourceId: deleted, reason: 'deleted' },
        { codeSourceId: idle, reason: 'idle' },
      ].sort((a, b) => a.codeSourceId.localeCompare(b.codeSourceId)),
    );
    assert.equal(log.filter((line) => line.includes('emptied the Git cache of a code source')).length, 2);
    assert.equal(existsSync(path.join(root, deleted)), false, "a deleted source's directory goes");
    assert.deepEqual(readdirSync(path.join(root, idle)), [], 'a live source keeps an empty directory');
    for (const id of [fresh, busy, used, deletedInUse]) assert.ok(readdirSync(path.join(root, id)).includes('HEAD'), `${id} is kept`);
    assert.equal(readFileSync(path.join(outside, 'keep.txt'), 'utf8'), 'the host file');
    assert.ok(existsSync(path.join(root, 'notes.txt')) && existsSync(path.join(root, '.hidden')));

    // Once the fetch ends, the next sweep empties the idle cache it held.
    // 'close': the pipe the command it ran shared is closed too, so both have ended.
    const exited = once(holder, 'close');
    endGroup(holder);
    await exited;
    assert.deepEqual(
      (await sweeper.sweepOnce()).map((s) => [s.codeSourceId, s.reason]),
      [[busy, 'idle']],
    );
    assert.deepEqual(await sweeper.sweepOnce(), [], 'an emptied cache is left alone');
  });

  it('does nothing on a host whose caches were never made', async () => {
    const sweeper = new GitCacheSweeper(t.db, { ...git, cacheDir: path.join(root, 'never') }, undefined, pino({ level: 'silent' }));
    assert.deepEqual(await sweeper.sweepOnce(), []);
  });
});
