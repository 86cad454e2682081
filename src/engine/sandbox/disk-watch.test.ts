import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync, writeSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { diskMeasure, MAX_FAILED_MEASURES, overDiskLimits, watchDisk, type DiskOverrun, type DiskUse } from './disk-watch.ts';

const LIMITS = { diskMb: 1, diskFiles: 10 };
const ROOTLESS = process.getuid?.() !== 0;

describe('the disk watch of a step', () => {
  let dir: string;
  // The watch's timers do not hold the process open (a worker's stop must not wait for them): this does, while the tests wait on them.
  let keepAlive: NodeJS.Timeout;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-disk-watch-'));
    keepAlive = setInterval(() => {}, 60_000);
  });
  after(() => {
    clearInterval(keepAlive);
    if (existsSync(path.join(dir, 'hidden'))) chmodSync(path.join(dir, 'hidden'), 0o700);
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds a step past its limits when either its bytes or its files are over, not at them', () => {
    assert.equal(overDiskLimits({ bytes: 1024 * 1024, files: 10 }, LIMITS), false);
    assert.equal(overDiskLimits({ bytes: 1024 * 1024 + 1, files: 1 }, LIMITS), true);
    assert.equal(overDiskLimits({ bytes: 0, files: 11 }, LIMITS), true);
  });

  it('measures again until the step is over, says so once with the limits, and measures no more', async () => {
    const uses: DiskUse[] = [
      { bytes: 10, files: 1 },
      { bytes: 0, files: 11 },
    ];
    let measures = 0;
    const overrun = await new Promise<DiskOverrun>((resolve) => watchDisk(LIMITS, async () => uses[Math.min(measures++, uses.length - 1)], resolve, 5));
    assert.deepEqual(overrun, { bytes: 0, files: 11, ...LIMITS });
    await sleep(50);
    assert.equal(measures, 2, 'no measure after the step was found over');
  });

  it('stops a step that cannot be measured several times in a row, and forgives a failure between good measures', async () => {
    const results = [false, false, true, false, false, false, false];
    let measures = 0;
    const overrun = await new Promise<DiskOverrun>((resolve) =>
      watchDisk(
        LIMITS,
        async () => {
          if (!results[measures++]) throw new Error('no measure');
          return { bytes: 0, files: 1 };
        },
        resolve,
        5,
      ),
    );
    assert.equal(measures, 3 + MAX_FAILED_MEASURES);
    assert.deepEqual(overrun, { bytes: 0, files: 0, ...LIMITS, unmeasurable: true });
  });

  it('ends a measure under way and measures no more once stopped', async () => {
    let measures = 0;
    let aborted = false;
    const watch = watchDisk(
      LIMITS,
      (_limits, signal) => {
        measures++;
        return new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('stopped'));
          }),
        );
      },
      () => assert.fail('a stopped watch reports nothing'),
      5,
    );
    await sleep(30);
    watch.stop();
    await sleep(30);
    assert.equal(measures, 1);
    assert.equal(aborted, true);
  });

  it('counts the blocks and entries of a tree, those under a directory made unreadable too', async () => {
    mkdirSync(path.join(dir, 'hidden', 'deep'), { recursive: true });
    writeFileSync(path.join(dir, 'hidden', 'deep', 'data'), Buffer.alloc(3 * 1024 * 1024, 1));
    for (let i = 0; i < 5; i++) writeFileSync(path.join(dir, `f${i}`), 'x');
    // As root (CI) the measure reads it anyway; as a normal user only in a user namespace of its own.
    chmodSync(path.join(dir, 'hidden'), 0o000);
    const use = await diskMeasure({ dir, inOwnUserNamespace: ROOTLESS })({ diskMb: 100, diskFiles: 100 }, new AbortController().signal);
    assert.ok(use.bytes >= 3 * 1024 * 1024, `${use.bytes} bytes`);
    // The directory itself, hidden, deep, data and the five files.
    assert.equal(use.files, 9);
  });

  it('walks no further than one entry past the file limit', async () => {
    // The nine entries the test above made.
    const use = await diskMeasure({ dir, inOwnUserNamespace: ROOTLESS })({ diskMb: 100, diskFiles: 4 }, new AbortController().signal);
    assert.deepEqual(use, { files: 5, bytes: 0 });
  });

  it("counts the deleted files the step's processes hold open, once each, and their descriptors", async () => {
    const gone = path.join(dir, 'gone');
    const fd = openSync(gone, 'w');
    writeSync(fd, Buffer.alloc(2 * 1024 * 1024, 1));
    unlinkSync(gone);
    // A process holding it, as a step's would, listed as a cgroup's processes are.
    const holder = spawn('sleep', ['30'], { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    const procs = path.join(dir, 'procs');
    writeFileSync(procs, `${holder.pid}\n`);
    try {
      const measure = diskMeasure({ dir: path.join(dir, 'hidden-none'), inOwnUserNamespace: false, procsFiles: [procs] });
      mkdirSync(path.join(dir, 'hidden-none'));
      const use = await measure({ diskMb: 100, diskFiles: 100 }, new AbortController().signal);
      assert.ok(use.bytes >= 2 * 1024 * 1024, `${use.bytes} bytes: the deleted file counted`);
      assert.ok(use.bytes < 4 * 1024 * 1024, `${use.bytes} bytes: counted once, though held twice`);
      assert.ok(use.files >= 4, `${use.files}: the directory and the holder's descriptors`);
    } finally {
      holder.kill('SIGKILL');
    }
  });
});
