import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import type { Logger } from '../src/platform/logger.ts';
import { GitCacheSweeper } from '../src/code-sources/git-cache-sweep.ts';
import { emptyDirectory, makeRoom, tryUseAlone, useSourceCache } from '../src/code-sources/git-cache.ts';
import { tryFileLock } from '../src/platform/file-lock.ts';
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

const holders: ChildProcess[] = [];

/** Holds the lock every fetch takes on a cache, as a fetch in progress does. */
async function holdLock(dir: string): Promise<ChildProcess> {
  // Its own process group: the command flock runs holds the lock too, and both must end to free it.
  const holder = spawn('flock', [dir, 'sh', '-c', 'echo held; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  holders.push(holder);
  await once(holder.stdout!, 'data');
  return holder;
}

after(() => {
  for (const holder of holders) endGroup(holder);
});

/** A cache as a fetch leaves it: a few files, a pack of `packBytes`, the directory last used `ageMs` ago. */
function makeCache(root: string, id: string, { ageMs = 0, packBytes = 1024 } = {}): string {
  const dir = path.join(root, id);
  mkdirSync(path.join(dir, 'objects/pack'), { recursive: true });
  writeFileSync(path.join(dir, 'HEAD'), 'ref: refs/heads/main\n');
  // Random, so that no file system's compression makes it take less room than its length.
  writeFileSync(path.join(dir, 'objects/pack/pack-1.pack'), randomBytes(packBytes));
  const at = new Date(Date.now() - ageMs);
  utimesSync(dir, at, at);
  return dir;
}

/** A logger whose lines the test reads. */
function capturedLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }), lines };
}

describe('the sweep of Git caches', () => {
  let t: TestApp;
  let root: string;
  let outside: string;
  const git = { ...loadGitConfig({}), cacheIdleHours: 24 };

  before(async () => {
    t = await startTestApp();
    root = mkdtempSync(path.join(os.tmpdir(), 'plinth-cache-sweep-'));
    outside = mkdtempSync(path.join(os.tmpdir(), 'plinth-cache-outside-'));
    git.cacheDir = root;
  });
  after(async () => {
    await t.close();
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  const codeSource = async (name: string) =>
    (await t.call('POST', '/code-sources', { body: { data: { name, url: 'https://git.example.com/r.git' } } })).body.data.id as string;

  const cache = (id: string, options: { ageMs?: number } = {}) => makeCache(root, id, options);

  it("empties a deleted source's cache and an idle one; leaves the rest, and a cache a fetch or a use holds", async () => {
    const [fresh, idle, busy, used, reading] = await Promise.all(['fresh', 'idle', 'busy', 'used', 'reading'].map(codeSource));
    const [deleted, deletedInUse] = ['a'.repeat(32), 'b'.repeat(32)];
    cache(fresh);
    // Used once, when its source existed: its use lock goes with it.
    await (await useSourceCache(git, undefined, deleted, pino({ level: 'silent' }))).end();
    cache(deleted, { ageMs: 2 * HOUR });
    assert.ok(existsSync(path.join(root, '.uses', deleted)));
    // Used within the hour, as by an installation that shares the work root against the docs.
    cache(deletedInUse, { ageMs: HOUR / 2 });
    cache(idle, { ageMs: 25 * HOUR });
    const busyDir = cache(busy, { ageMs: 25 * HOUR });
    cache(used, { ageMs: 25 * HOUR });
    // A checkout that has gone on so long its mark is old: it still holds its cache's use lock.
    const longUse = await useSourceCache(git, undefined, reading, pino({ level: 'silent' }));
    cache(reading, { ageMs: 25 * HOUR });
    // A use marks its cache before any process of it starts.
    await (await useSourceCache(git, undefined, used, pino({ level: 'silent' }))).end();
    // A link to the host's files is removed as a link, never followed.
    symlinkSync(outside, path.join(root, idle, 'objects/escape'));
    writeFileSync(path.join(outside, 'keep.txt'), 'the host file');
    // What is not a source's cache is not the sweep's.
    writeFileSync(path.join(root, 'notes.txt'), 'not a cache');
    mkdirSync(path.join(root, '.hidden'));
    const holder = await holdLock(busyDir);

    const { log: logger, lines: log } = capturedLog();
    const sweeper = new GitCacheSweeper(t.db, git, undefined, logger);
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
    assert.equal(existsSync(path.join(root, '.uses', deleted)), false, 'and its use lock');
    assert.deepEqual(readdirSync(path.join(root, idle)), [], 'a live source keeps an empty directory');
    for (const id of [fresh, busy, used, deletedInUse, reading]) assert.ok(readdirSync(path.join(root, id)).includes('HEAD'), `${id} is kept`);
    assert.equal(readFileSync(path.join(outside, 'keep.txt'), 'utf8'), 'the host file');
    assert.ok(existsSync(path.join(root, 'notes.txt')) && existsSync(path.join(root, '.hidden')));

    // Once the fetch and the use end, the next sweep empties the idle caches they held.
    // 'close': the pipe the command it ran shared is closed too, so both have ended.
    const exited = once(holder, 'close');
    endGroup(holder);
    await exited;
    await longUse.end();
    assert.deepEqual(
      (await sweeper.sweepOnce()).map((s) => [s.codeSourceId, s.reason]).sort(),
      [
        [busy, 'idle'],
        [reading, 'idle'],
      ].sort(),
    );
    assert.deepEqual(await sweeper.sweepOnce(), [], 'an emptied cache is left alone');
  });

  it('sweeps caches made before use locks were', async () => {
    const older = mkdtempSync(path.join(os.tmpdir(), 'plinth-cache-older-'));
    try {
      const gone = 'c'.repeat(32);
      makeCache(older, gone, { ageMs: 2 * HOUR });
      const sweeper = new GitCacheSweeper(t.db, { ...git, cacheDir: older }, undefined, pino({ level: 'silent' }));
      assert.deepEqual(
        (await sweeper.sweepOnce()).map((s) => [s.codeSourceId, s.reason]),
        [[gone, 'deleted']],
      );
      assert.equal(existsSync(path.join(older, gone)), false);
    } finally {
      rmSync(older, { recursive: true, force: true });
    }
  });

  it('does nothing on a host whose caches were never made', async () => {
    const sweeper = new GitCacheSweeper(t.db, { ...git, cacheDir: path.join(root, 'never') }, undefined, pino({ level: 'silent' }));
    assert.deepEqual(await sweeper.sweepOnce(), []);
  });
});

describe('the room all Git caches of a host take together', () => {
  let base: string;
  const KiB = 1024;
  /** A cache of a 256 KiB pack: what each takes on disk, its directories included, is measured. */
  const PACK = 256 * KiB;
  const quiet = pino({ level: 'silent' });

  before(() => {
    base = mkdtempSync(path.join(os.tmpdir(), 'plinth-cache-room-'));
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  /**
   * A host's root of five caches, from the least recently used: one a fetch holds, one a long use
   * holds, two unused for hours, and the one a use is about to mark.
   */
  const fiveCaches = async () => {
    const root = mkdtempSync(path.join(base, 'host-'));
    const settings = (cacheTotalMaxBytes: number) => ({ ...loadGitConfig({}), cacheDir: root, cacheTotalMaxBytes });
    await holdLock(makeCache(root, 'fetching', { ageMs: 4 * HOUR, packBytes: PACK }));
    const inUse = await useSourceCache(settings(Number.MAX_SAFE_INTEGER), undefined, 'reading', quiet);
    makeCache(root, 'reading', { ageMs: 3 * HOUR, packBytes: PACK });
    makeCache(root, 'oldest', { ageMs: 2 * HOUR, packBytes: PACK });
    makeCache(root, 'older', { ageMs: HOUR, packBytes: PACK });
    makeCache(root, 'used', { ageMs: 5 * HOUR, packBytes: PACK });
    return {
      root,
      settings,
      inUse,
      hasPack: (id: string) => existsSync(path.join(root, id, 'objects/pack/pack-1.pack')),
    };
  };

  it('empties nothing while all caches together are within PLINTH_GIT_CACHE_TOTAL_MAX_BYTES', async () => {
    const host = await fiveCaches();
    const { log, lines } = capturedLog();
    await (await useSourceCache(host.settings(20 * 1024 * KiB), undefined, 'used', log)).end();
    for (const id of ['fetching', 'reading', 'oldest', 'older', 'used']) assert.ok(host.hasPack(id), `${id} is kept`);
    assert.deepEqual(lines, []);
    await host.inUse.end();
  });

  it('empties the least recently used caches nobody uses until all fit, and never one in use', async () => {
    const host = await fiveCaches();
    // Room for four of the five: one must go.
    const { log, lines } = capturedLog();
    const use = await useSourceCache(host.settings(4.5 * (PACK + 16 * KiB)), undefined, 'used', log);
    assert.equal(host.hasPack('oldest'), false, 'the least recently used cache nobody uses is emptied');
    assert.deepEqual(readdirSync(path.join(host.root, 'oldest')), [], 'its directory stays, empty, for its next fetch');
    for (const id of ['fetching', 'reading', 'older', 'used']) assert.ok(host.hasPack(id), `${id} is kept`);
    const emptied = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'emptied the Git cache of a code source');
    assert.deepEqual(
      emptied.map((entry) => [entry.codeSourceId, entry.reason]),
      [['oldest', 'room']],
    );
    assert.ok(emptied[0].bytes >= PACK, 'the log says how much room it made');
    await use.end();
    await host.inUse.end();
  });

  it('makes room again as a use ends, for what its fetch added', async () => {
    const host = await fiveCaches();
    // Room for all five as the use begins; not once its fetch has added a pack.
    const settings = host.settings(5.5 * (PACK + 16 * KiB));
    const { log, lines } = capturedLog();
    const use = await useSourceCache(settings, undefined, 'used', log);
    assert.deepEqual(lines, []);
    writeFileSync(path.join(use.dir, 'objects/pack/pack-2.pack'), randomBytes(2 * PACK));
    await use.end();
    assert.equal(host.hasPack('oldest'), false);
    assert.equal(host.hasPack('older'), false);
    for (const id of ['fetching', 'reading', 'used']) assert.ok(host.hasPack(id), `${id} is kept`);
    await host.inUse.end();
  });

  it('leaves room to the process of the host that is making it', async () => {
    const host = await fiveCaches();
    const making = await tryFileLock(path.join(host.root, '.room'));
    assert.ok(making);
    const use = await useSourceCache(host.settings(PACK), undefined, 'used', quiet);
    for (const id of ['oldest', 'older']) assert.ok(host.hasPack(id), `${id} is left to the other process`);
    await making.release();
    await use.end();
    for (const id of ['oldest', 'older']) assert.equal(host.hasPack(id), false, `${id} is emptied once no other process makes room`);
    await host.inUse.end();
  });

  it('a use that begins while its cache is emptied waits, then finds it empty', async () => {
    const host = await fiveCaches();
    const emptying = await tryUseAlone(host.root, 'oldest');
    assert.ok(emptying);
    let begun = false;
    const use = useSourceCache(host.settings(20 * 1024 * KiB), undefined, 'oldest', quiet).then((u) => {
      begun = true;
      return u;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(begun, false, 'the use waits for the emptying');
    await emptyDirectory(path.join(host.root, 'oldest'));
    await emptying.release();
    const began = await use;
    assert.deepEqual(readdirSync(began.dir), []);
    await began.end();
    await host.inUse.end();
  });

  it('empties every cache nobody uses when that is not room enough, says the rest are in use, and a use once ended', async () => {
    const host = await fiveCaches();
    // The use making room holds its own cache, the least recently used of all until its mark.
    const using = await useSourceCache(host.settings(Number.MAX_SAFE_INTEGER), undefined, 'used', quiet);
    const marked = new Date(Date.now() - 5 * HOUR);
    utimesSync(using.dir, marked, marked);
    const { log, lines } = capturedLog();
    assert.deepEqual(await makeRoom(host.root, host.settings(PACK), log), ['oldest', 'older'], 'least recently used first');
    for (const id of ['fetching', 'reading', 'used']) assert.ok(host.hasPack(id), `${id} is kept: a fetch or a use holds it`);
    assert.ok(lines.some((line) => line.includes('the Git caches in use take more than PLINTH_GIT_CACHE_TOTAL_MAX_BYTES')));

    await host.inUse.end();
    assert.deepEqual(await makeRoom(host.root, host.settings(PACK), quiet), ['reading'], 'a use that ended holds its cache no more');
    await using.end();
  });
});
