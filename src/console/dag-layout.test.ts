import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { layoutDag, NODE_HEIGHT, NODE_WIDTH } from './dag-layout.ts';

const columnOf = (layout: ReturnType<typeof layoutDag>) => Object.fromEntries(layout.nodes.map((n) => [n.id, Math.round(n.x / NODE_WIDTH)]));

describe('layoutDag', () => {
  it('puts each step one column right of the deepest step it needs', () => {
    const layout = layoutDag([
      { id: 'deploy', needs: ['package'] },
      { id: 'build' },
      { id: 'test', needs: ['build'] },
      { id: 'lint', needs: ['build'] },
      { id: 'package', needs: ['test', 'lint'] },
    ]);
    const x = Object.fromEntries(layout.nodes.map((n) => [n.id, n.x]));
    assert.ok(x.build < x.test && x.test === x.lint && x.lint < x.package && x.package < x.deploy);
    assert.equal(layout.edges.length, 5);
    assert.ok(layout.width >= x.deploy + NODE_WIDTH);
    assert.ok(layout.height >= 2 * NODE_HEIGHT, 'test and lint stand one above the other');
  });

  it('orders a column by where the steps it needs stand, so edges do not cross', () => {
    const layout = layoutDag([{ id: 'a' }, { id: 'b' }, { id: 'after-b', needs: ['b'] }, { id: 'after-a', needs: ['a'] }]);
    const y = Object.fromEntries(layout.nodes.map((n) => [n.id, n.y]));
    assert.ok(y['after-a'] < y['after-b']);
  });

  it('draws an edge from the right side of a need to the left side of the step', () => {
    const { nodes, edges } = layoutDag([{ id: 'a' }, { id: 'b', needs: ['a'] }]);
    const [a, b] = nodes;
    assert.equal(edges[0].path.split(' ')[0], `M${a.x + NODE_WIDTH},${a.y + NODE_HEIGHT / 2}`);
    assert.ok(edges[0].path.endsWith(`${b.x},${b.y + NODE_HEIGHT / 2}`));
  });

  it('lays out a chain of 20,000 steps without recursion, in a column each', () => {
    const chain = Array.from({ length: 20_000 }, (_, i) => ({ id: `s${i}`, needs: i ? [`s${i - 1}`] : [] }));
    const layout = layoutDag(chain.reverse());
    const columns = new Set(layout.nodes.map((n) => n.x));
    assert.equal(columns.size, 20_000);
    assert.equal(layout.edges.length, 19_999);
  });

  it('ignores needs that name no step, and survives a cycle', () => {
    assert.deepEqual(columnOf(layoutDag([{ id: 'a', needs: ['ghost', 'a'] }])), { a: 0 });
    const cyclic = layoutDag([
      { id: 'a', needs: ['b'] },
      { id: 'b', needs: ['a'] },
    ]);
    assert.equal(cyclic.nodes.length, 2);
    assert.ok(cyclic.edges.length <= 1);
    assert.deepEqual(layoutDag([]), { nodes: [], edges: [], width: 8, height: 8 });
  });
});
