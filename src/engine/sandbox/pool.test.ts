import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WarmPool } from './pool.ts';

const settle = () => new Promise((r) => setTimeout(r, 10));

describe('the warm pool', () => {
  it('hands each item out once, refills to its size in the background, and discards what died', async () => {
    let made = 0;
    const dead = new Set<number>();
    const discarded: number[] = [];
    const pool = new WarmPool(
      2,
      async () => ++made,
      (n) => !dead.has(n),
      async (n) => void discarded.push(n),
      () => {},
    );
    assert.equal(pool.take(), undefined, 'nothing is ready before the first fill');
    await settle();
    assert.equal(pool.readyCount, 2);
    dead.add(1);
    assert.equal(pool.take(), 2, 'the dead one is skipped');
    assert.deepEqual(discarded, [1]);
    await settle();
    assert.equal(pool.readyCount, 2);
    assert.equal(pool.take(), 3);
    await settle();
    assert.equal(made, 4, 'a take that leaves items ready does not refill: its owner calls fill() when it hurts least');
    assert.equal(pool.take(), 4);
    assert.equal(made, 4, "a take that empties the pool refills, but only after its caller's own work (a refill spawns, which blocks the event loop)");
    pool.fill();
    await pool.close();
    assert.equal(pool.readyCount, 0);
    assert.ok(discarded.includes(5) && discarded.includes(6), `what was being made at close is discarded: ${discarded}`);
    await settle();
    assert.equal(made, 6, 'nothing is made after close');
  });

  it('stops refilling after a failure to make one, until the next take', async () => {
    let calls = 0;
    const errors: unknown[] = [];
    const pool = new WarmPool(
      3,
      async () => {
        calls++;
        throw new Error('cannot build');
      },
      () => true,
      async () => {},
      (e) => errors.push(e),
      1,
    );
    pool.fill();
    await settle();
    assert.equal(calls, 1);
    assert.equal(pool.take(), undefined);
    await settle();
    assert.equal(calls, 2);
    assert.equal(errors.length, 2);
  });

  it('of size 0 makes nothing', async () => {
    let calls = 0;
    const pool = new WarmPool(
      0,
      async () => ++calls,
      () => true,
      async () => {},
      () => {},
    );
    pool.fill();
    assert.equal(pool.take(), undefined);
    await settle();
    assert.equal(calls, 0);
  });
});
