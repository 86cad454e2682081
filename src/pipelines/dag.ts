// The graph of a pipeline's steps, for the validator (cycles) and the engine (what starts next, what a
// plan run skips). A step depends on the steps it `needs`; the engine starts a step once all of them
// succeeded. The functions take the minimal `{id, needs}` shape so the validator can run them on a
// config it has not finished checking.

import { stronglyConnectedComponents } from '../platform/graph.ts';

export interface DagNode {
  id: string;
  needs?: readonly string[];
}

/**
 * withDescendants returns `stepIds` and every step that transitively needs one of them: what a plan
 * run skips from its approval gates on.
 */
export function withDescendants(steps: readonly DagNode[], stepIds: readonly string[]): Set<string> {
  const found = new Set(stepIds);
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of steps) {
      if (!found.has(s.id) && (s.needs ?? []).some((n) => found.has(n))) {
        found.add(s.id);
        grew = true;
      }
    }
  }
  return found;
}

/**
 * readySteps returns the steps that may start now: not started yet and with every need succeeded, in
 * config order. Independent steps come back together, which is what lets the engine run them in parallel.
 */
export function readySteps<T extends DagNode>(steps: readonly T[], succeeded: { has(id: string): boolean }, started: { has(id: string): boolean }): T[] {
  return steps.filter((s) => !started.has(s.id) && (s.needs ?? []).every((n) => succeeded.has(n)));
}

/**
 * findCycles returns each cycle of the graph once, as the ids along it with the first repeated at the
 * end (`['a', 'b', 'a']`). Self-needs and unknown needs are ignored: the validator reports those on
 * their own. One cycle is reported per strongly connected component (Tarjan's algorithm), which names
 * every step caught in it without listing the combinatorially many cycles a dense component can hold.
 */
export function findCycles(steps: readonly DagNode[]): string[][] {
  const ids = new Set(steps.map((s) => s.id));
  const edges = new Map(steps.map((s) => [s.id, (s.needs ?? []).filter((n) => n !== s.id && ids.has(n))]));
  return stronglyConnectedComponents(
    steps.map((s) => s.id),
    edges,
  )
    .filter((component) => component.length > 1)
    .map((component) => cycleThrough(component, edges));
}

/** A closed walk inside one component, starting at its first step in config order. */
function cycleThrough(component: string[], edges: Map<string, string[]>): string[] {
  const members = new Set(component);
  const start = [...edges.keys()].find((id) => members.has(id))!;
  const path = [start];
  const seen = new Set([start]);
  const walk = (id: string): boolean => {
    for (const next of edges.get(id) ?? []) {
      if (!members.has(next)) continue;
      if (next === start) {
        path.push(start);
        return true;
      }
      if (seen.has(next)) continue;
      seen.add(next);
      path.push(next);
      if (walk(next)) return true;
      path.pop();
    }
    return false;
  };
  walk(start);
  return path;
}
