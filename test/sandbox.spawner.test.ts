import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { after, describe, it } from 'node:test';
import { Spawner, type SpawnSpec } from '../src/engine/sandbox/spawner.ts';
import type { StepChild } from '../src/engine/sandbox/sandbox.ts';
import { hostProcesses, isAlive, waitFor } from './helpers/engine.ts';

const sh = (script: string, fd3 = false): SpawnSpec => ({ file: 'sh', args: ['-c', script], env: { PATH: '/usr/bin:/bin' }, cwd: '/', fd3 });

function outputOf(child: StepChild) {
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += `out:${d}`));
  child.stderr!.on('data', (d: Buffer) => (out += `err:${d}`));
  return () => out;
}

const helperOf = (comm: string) => hostProcesses().find((p) => p.ppid === process.pid && p.comm === comm)?.pid;

/**
 * The worker's spawner: sandboxes are started by a small helper process, and behave as the worker's own
 * children would.
 */
describe('spawner', () => {
  const spawner = new Spawner();
  const comm = 'node';
  after(() => spawner.close());

  it('hands over the process: its output on both pipes, its script on fd 3, its exit, and close once both pipes drained', async () => {
    const proc = await spawner.spawn(sh('read -r line <&3; echo "got $line"; echo oops >&2; exit 3', true));
    assert.ok(proc.child.pid! > 0);
    const output = outputOf(proc.child);
    const exit = once(proc.child, 'exit');
    const close = once(proc.child, 'close');
    proc.handScript('hello\n');
    assert.deepEqual(await exit, [3, null]);
    await close;
    assert.match(output(), /out:got hello/);
    assert.match(output(), /err:oops/);
  });

  it('hands a script over byte for byte, whatever it holds: quotes, newlines, NULs, text shaped like an order, a megabyte of it', async () => {
    // A step's script is the tenant's: nothing in it may reach the spawner as anything but bytes for fd 3.
    const hostile = `"}\n{"op":"signal","id":1,"signal":"SIGKILL"}\n\\u0000\0é\r\n` + 'x'.repeat(1_000_000);
    // One echo, so one write: the digest of what arrived on fd 3, then what is left there once it ended (nothing).
    const proc = await spawner.spawn(sh('digest=$(sha256sum <&3 | cut -c1-64); echo "$digest $(wc -c <&3)"', true));
    const output = outputOf(proc.child);
    proc.handScript(hostile);
    assert.deepEqual(await once(proc.child, 'close'), [0, null]);
    const expected = createHash('sha256').update(hostile).digest('hex');
    assert.equal(output(), `out:${expected} 0\n`);
  });

  it('loses no output a process writes before the worker holds its pipes', async () => {
    const proc = await spawner.spawn(sh('echo at-once; echo also-at-once >&2; head -c 100000 /dev/zero | tr "\\0" x'));
    const output = outputOf(proc.child);
    await once(proc.child, 'close');
    assert.match(output(), /^out:at-once\n/);
    assert.match(output(), /err:also-at-once\n/);
    assert.equal(output().replace(/out:|err:|at-once\n|also-at-once\n/g, '').length, 100_000);
  });

  it('signals the whole process group, and a process nobody reads still closes', async () => {
    const proc = await spawner.spawn(sh('sleep 60 & echo up; wait'));
    await new Promise<void>((resolve) => proc.child.stdout!.once('data', () => resolve()));
    // Forked before the echo, it may not have exec'd `sleep` yet.
    const sleeper = await waitFor('its background sleep', async () => hostProcesses().find((p) => p.comm === 'sleep' && p.ppid === proc.child.pid));
    const closed = once(proc.child, 'close');
    proc.kill();
    assert.deepEqual(await closed, [null, 'SIGKILL']);
    await waitFor('the group to be gone', async () => (isAlive(sleeper.pid) ? undefined : true));
    // Once it exited its group id may be another process's: a late signal is dropped, not sent.
    proc.kill();
  });

  it('release() closes fd 3 and stdin unwritten: a shell reading its script runs nothing', async () => {
    const proc = await spawner.spawn(sh('script=$(cat <&3); test -z "$script" && echo nothing-run', true));
    const output = outputOf(proc.child);
    proc.release();
    assert.deepEqual(await once(proc.child, 'close'), [0, null]);
    assert.equal(output(), 'out:nothing-run\n');
  });

  it('a process that cannot start is a rejected spawn', async () => {
    await assert.rejects(spawner.spawn({ ...sh(''), file: '/nonexistent/plinth-binary' }), /could not start.*ENOENT/);
  });

  it('when the helper dies, what it started is reported killed and ends (its guard pipe closed), and the next spawn starts a new helper', async () => {
    // A guard like the sandbox's: it ends the process group when its stdin (held by the helper) closes.
    const proc = await spawner.spawn(sh('exec 4<&0; sleep 60 & (while read -r _; do :; done; kill -KILL 0) <&4 & echo up; wait'));
    await new Promise<void>((resolve) => proc.child.stdout!.once('data', () => resolve()));
    const helper = helperOf(comm);
    assert.ok(helper, 'a helper runs');
    const group = await waitFor('its sleep and its guard', async () => {
      const children = hostProcesses()
        .filter((p) => p.ppid === proc.child.pid)
        .map((p) => p.pid);
      return children.length >= 2 ? children : undefined;
    });
    const exited = once(proc.child, 'exit');
    process.kill(helper, 'SIGKILL');
    assert.deepEqual(await exited, [null, 'SIGKILL']);
    await waitFor('the processes the dead helper started to end', async () => (group.some(isAlive) ? undefined : true));
    const next = await spawner.spawn(sh('echo again'));
    const output = outputOf(next.child);
    await once(next.child, 'close');
    assert.equal(output(), 'out:again\n');
    assert.notEqual(helperOf(comm), helper);
  });
});
