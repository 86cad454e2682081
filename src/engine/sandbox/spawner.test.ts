import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { RemoteChild } from './spawner.ts';

/** A stand-in for a pipe handed over by the spawner: closes when destroyed. */
const pipe = () => new PassThrough() as unknown as Socket;

describe('a spawned process as its worker sees it', () => {
  it('closes once it exited and both its pipes closed', async () => {
    const child = new RemoteChild();
    const [stdout, stderr] = [pipe(), pipe()];
    child.adopt('stdout', stdout);
    child.adopt('stderr', stderr);
    let closed = false;
    child.once('close', () => (closed = true));
    child.exited(3, null);
    await once(child, 'exit');
    stdout.destroy();
    await once(stdout, 'close');
    assert.equal(closed, false, 'stderr is still open');
    stderr.destroy();
    assert.deepEqual(await once(child, 'close'), [3, null]);
  });

  it('a pipe that never reached the worker (it had no descriptor left) does not hold its close back', async () => {
    const child = new RemoteChild();
    const stdout = pipe();
    child.adopt('stdout', stdout);
    const closed = once(child, 'close');
    child.exited(null, 'SIGKILL');
    stdout.destroy();
    assert.deepEqual(await closed, [null, 'SIGKILL']);
    const bare = new RemoteChild();
    const bareClosed = once(bare, 'close');
    bare.exited(0, null);
    assert.deepEqual(await bareClosed, [0, null]);
  });

  it('a pipe handed over after the exit was told is closed, not adopted', async () => {
    const child = new RemoteChild();
    const closed = once(child, 'close');
    child.exited(0, null);
    const late = pipe();
    child.adopt('stderr', late);
    assert.equal(child.stderr, null);
    assert.equal(late.destroyed, true);
    assert.deepEqual(await closed, [0, null]);
  });
});
