import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { NATIVE_LAUNCHER } from '../src/engine/sandbox/native.ts';
import { nativeLauncherBuilt } from './helpers/sandbox.ts';

const runnable = nativeLauncherBuilt() && process.getuid?.() === 0;

/** Runs the launcher with a script on fd 3 and its guard pipe held open; resolves with its status and output. */
async function launch(args: string[], script = 'echo STEP RAN\n') {
  const child = spawn(NATIVE_LAUNCHER, args, { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' }, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d));
  child.stderr!.on('data', (d: Buffer) => (output += d));
  (child.stdio[3] as NodeJS.WritableStream).on('error', () => {});
  (child.stdio[3] as NodeJS.WritableStream).end(script);
  const [code] = await once(child, 'close');
  child.stdin!.destroy();
  return { code: code as number | null, output };
}

describe('the native sandbox launcher', { skip: !runnable && 'not built here (no C compiler), or not root' }, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-launcher-'));
  const root = path.join(dir, 'root');
  mkdirSync(root);
  after(() => rmSync(dir, { recursive: true, force: true }));
  const fstab = (lines: string) => {
    const file = path.join(dir, `fstab-${Math.random().toString(36).slice(2)}`);
    writeFileSync(file, lines);
    return file;
  };

  it('refuses too few arguments, a bad uid or process limit, with status 125 and why, running nothing', async () => {
    const usage = await launch(['only-one']);
    assert.equal(usage.code, 125);
    assert.match(usage.output, /usage: plinth-sandbox/);
    for (const [uid, nproc, why] of [['root', '64', /UID must be a positive integer/], ['200000', '0', /NPROC must be a positive integer/], ['-1', '64', /UID/]] as const) {
      const bad = await launch([fstab(''), root, uid, nproc]);
      assert.equal(bad.code, 125, bad.output);
      assert.match(bad.output, why);
      assert.doesNotMatch(bad.output, /STEP RAN/);
    }
  });

  it('refuses an unknown mount option or a short fstab line before the step shell starts', async () => {
    const unknown = await launch([fstab(`none ${root} tmpfs size=1m,exec_anything 0 0\n`), root, '200000', '64']);
    assert.equal(unknown.code, 125, unknown.output);
    assert.match(unknown.output, /unknown mount option "exec_anything"/);
    const short = await launch([fstab(`none ${root}\n`), root, '200000', '64']);
    assert.equal(short.code, 125, short.output);
    assert.match(short.output, /fewer than four fields/);
    for (const r of [unknown, short]) assert.doesNotMatch(r.output, /STEP RAN/);
  });

  it('fails a mount it cannot make with the path and the reason, running nothing', async () => {
    const missing = await launch([fstab(`${path.join(dir, 'no such dir')} ${root} none bind,ro 0 0\n`.replace('no such dir', 'no\\040such\\040dir')), root, '200000', '64']);
    assert.equal(missing.code, 125, missing.output);
    assert.match(missing.output, /bind .*no such dir on .*: No such file or directory/);
    assert.doesNotMatch(missing.output, /STEP RAN/);
  });
});
