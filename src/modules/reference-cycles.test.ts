import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findCycle } from './reference-cycles.ts';

const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges));

describe('reference cycles', () => {
  it('finds none in a chain', () => {
    assert.equal(findCycle(graph({ database: ['network'] }), 'service', ['database']), undefined);
  });

  it('names the cycle a new reference would close, from and back to the consumer', () => {
    // network consumes service; service → database → network would close network → service → database → network.
    assert.deepEqual(findCycle(graph({ service: ['database'], database: [] }), 'network', ['service']), undefined);
    assert.deepEqual(findCycle(graph({ service: ['database'], database: ['network'] }), 'network', ['service']), ['network', 'service', 'database', 'network']);
  });

  it('treats a reference to itself as a cycle', () => {
    assert.deepEqual(findCycle(graph({}), 'a', ['a']), ['a', 'a']);
  });

  it('answers a shortest cycle when there are several', () => {
    const edges = graph({ b: ['c', 'a'], c: ['a'] });
    assert.deepEqual(findCycle(edges, 'a', ['b']), ['a', 'b', 'a']);
  });

  it('walks a long chain without recursion', () => {
    const edges = new Map<string, string[]>();
    for (let i = 0; i < 100_000; i++) edges.set(`n${i}`, [`n${i + 1}`]);
    edges.set('n100000', ['start']);
    assert.equal(findCycle(edges, 'start', ['n0'])?.length, 100_003);
  });
});
