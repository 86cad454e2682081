import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { measureDisk, overDiskLimits, watchDisk, type DiskUse } from './disk-watch.ts';

const LIMITS = { diskMb: 1, diskFiles: 10 };

describe('the disk watch of a workspace', () => {
  it('finds a workspace past its limits when either its bytes or its files are over, not at them', () => {
    assert.equal(overDiskLimits({ bytes: 1024 * 1024, files: 10 }, LIMITS), false);
    assert.equal(overDiskLimits({ bytes: 1024 * 1024 + 1, files: 1 }, LIMITS), true);
    assert.equal(overDiskLimits({ bytes: 0, files: 11 }, LIMITS), true);
  });

  it('measures again until the workspace is over, says so once, and measures no more', async () => {
    const uses: DiskUse[] = [
      { bytes: 10, files: 1 },
      { bytes: 0, files: 11 },
    ];
    let measures = 0;
    const seen: DiskUse[] = [];
    watchDisk(
      LIMITS,
      async () => uses[Math.min(measures++, uses.length - 1)],
      (use) => seen.push(use),
      5,
    );
    await sleep(100);
    assert.deepEqual(seen, [{ bytes: 0, files: 11 }]);
    assert.equal(measures, 2);
  });

  it('keeps watching past a measure that failed, and stops when told', async () => {
    let measures = 0;
    const seen: DiskUse[] = [];
    const watch = watchDisk(
      LIMITS,
      async () => {
        measures++;
        throw new Error('du printed no total');
      },
      (use) => seen.push(use),
      5,
    );
    await sleep(60);
    watch.stop();
    const stoppedAt = measures;
    await sleep(40);
    assert.ok(stoppedAt >= 2, `measured ${stoppedAt} times`);
    assert.equal(measures, stoppedAt);
    assert.deepEqual(seen, []);
  });

  it('counts the blocks and files of a tree, those under a directory made unreadable too', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-disk-watch-'));
    try {
      mkdirSync(path.join(dir, 'hidden', 'deep'), { recursive: true });
      writeFileSync(path.join(dir, 'hidden', 'deep', 'data'), Buffer.alloc(3 * 1024 * 1024, 1));
      for (let i = 0; i < 5; i++) writeFileSync(path.join(dir, `f${i}`), 'x');
      // As root (CI) du reads it anyway; as a normal user only a user namespace of its own does.
      chmodSync(path.join(dir, 'hidden'), 0o000);
      const use = await measureDisk(dir, process.getuid?.() !== 0);
      assert.ok(use.bytes >= 3 * 1024 * 1024, `${use.bytes} bytes`);
      // The directory itself, hidden, deep, data and the five files.
      assert.equal(use.files, 9);
    } finally {
      chmodSync(path.join(dir, 'hidden'), 0o700);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
