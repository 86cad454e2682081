// Graph helpers over a pipeline's steps. A step depends on the steps it `needs`; the engine starts a
// step once all of them succeeded. The functions take the minimal `{id, needs}` shape so the validator
// can run them on a config it has not finished checking.

import { stronglyConnectedComponents } from '../platform/graph.ts';

export interface DagNode {
  id: string;
  needs?: readonly string[];
}

/** dependenciesOf returns the ids a step needs, in config order, or [] for an unknown step. */
export function dependenciesOf(steps: readonly DagNode[], stepId: string): string[] {
  return [...(steps.find((s) => s.id === stepId)?.needs ?? [])];
}

/** dependentsOf returns the ids of the steps that directly need `stepId`, in config order. */
export function dependentsOf(steps: readonly DagNode[], stepId: string): string[] {
  return steps.filter((s) => s.needs?.includes(stepId)).map((s) => s.id);
}

/**
 * descendantsOf returns every step that transitively needs `stepId`, in config order: the steps the
 * engine marks SKIPPED when that step fails for good.
 */
export function descendantsOf(steps: readonly DagNode[], stepId: string): string[] {
  const found = new Set<string>();
  const pending = [stepId];
  while (pending.length > 0) {
    const current = pending.pop()!;
    for (const dependent of dependentsOf(steps, current)) {
      if (!found.has(dependent)) {
        found.add(dependent);
        pending.push(dependent);
      }
    }
  }
  return steps.filter((s) => found.has(s.id)).map((s) => s.id);
}

/**
 * topologicalOrder returns the steps so that each comes after everything it needs. Among steps whose
 * needs are met at the same time, config order is kept, so the result is deterministic. Throws on a
 * cycle or an unknown `needs`; a validated config has neither.
 */
export function topologicalOrder<T extends DagNode>(steps: readonly T[]): T[] {
  const ordered: T[] = [];
  const placed = new Set<string>();
  let remaining = [...steps];
  while (remaining.length > 0) {
    const ready = remaining.filter((s) => (s.needs ?? []).every((n) => placed.has(n)));
    if (ready.length === 0) throw new Error(`steps ${remaining.map((s) => s.id).join(', ')} cannot be ordered: a cycle or an unknown need`);
    for (const step of ready) {
      ordered.push(step);
      placed.add(step.id);
    }
    remaining = remaining.filter((s) => !placed.has(s.id));
  }
  return ordered;
}

/**
 * readySteps returns the steps that may start now: not started yet and with every need succeeded.
 * Independent steps come back together, which is what lets the engine run them in parallel.
 */
export function readySteps<T extends DagNode>(steps: readonly T[], succeeded: ReadonlySet<string>, started: ReadonlySet<string>): T[] {
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
  return stronglyConnectedComponents(steps.map((s) => s.id), edges)
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
