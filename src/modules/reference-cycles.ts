// The module graph must stay acyclic: an instance consumes its producers' outputs, so a cycle could
// never deploy. Edges here run consumer → producer.

/**
 * findCycle answers the cycle that the edges from `consumer` to `producers` would close, as the
 * instances along it starting and ending at `consumer`, or undefined when they close none. `edges`
 * holds every other edge of the graph. Breadth first, so the cycle named is a shortest one.
 */
export function findCycle(edges: ReadonlyMap<string, readonly string[]>, consumer: string, producers: readonly string[]): string[] | undefined {
  const cameFrom = new Map<string, string>();
  const queue: string[] = [];
  for (const p of producers) {
    if (p === consumer) return [consumer, consumer];
    if (!cameFrom.has(p)) {
      cameFrom.set(p, consumer);
      queue.push(p);
    }
  }
  for (let head = 0; head < queue.length; head++) {
    const at = queue[head];
    for (const next of edges.get(at) ?? []) {
      if (next === consumer) return [consumer, ...pathTo(cameFrom, at, consumer), consumer];
      if (!cameFrom.has(next)) {
        cameFrom.set(next, at);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/** The nodes from the first producer to `end`, following `cameFrom` back from `end`. */
function pathTo(cameFrom: ReadonlyMap<string, string>, end: string, consumer: string): string[] {
  const path: string[] = [];
  for (let step = end; step !== consumer; step = cameFrom.get(step)!) path.push(step);
  return path.reverse();
}
