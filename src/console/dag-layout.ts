// Where to draw a pipeline's steps: in columns by depth (a step stands one column right of the deepest
// step it needs), each column ordered by where the steps it needs stand, so edges cross as little as a
// simple rule allows. Pure and small: pipelines have tens of steps, not thousands.

export interface DagInput {
  id: string;
  needs?: readonly string[];
}

export interface PlacedNode {
  id: string;
  x: number;
  y: number;
}

export interface PlacedEdge {
  from: string;
  to: string;
  /** An SVG path from the right side of `from` to the left side of `to`. */
  path: string;
}

export interface DagLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

export const NODE_WIDTH = 180;
export const NODE_HEIGHT = 44;
const COLUMN_GAP = 56;
const ROW_GAP = 14;
const MARGIN = 4;

/** layoutDag places every step; a need naming no step of the list, or a cycle, is drawn as if absent. */
export function layoutDag(steps: readonly DagInput[]): DagLayout {
  const ids = new Set(steps.map((s) => s.id));
  const needsOf = new Map(steps.map((s) => [s.id, (s.needs ?? []).filter((n) => ids.has(n) && n !== s.id)]));
  const depth = depths(steps, needsOf);
  const columns: string[][] = [];
  for (const step of steps) {
    const d = depth.get(step.id)!;
    if (!columns[d]) columns[d] = [];
    columns[d].push(step.id);
  }
  const row = new Map<string, number>();
  for (const column of columns) {
    if (!column) continue;
    // Barycentre of what each step needs; ties keep the config's order (sort is stable).
    const weight = (id: string) => {
      const rows = needsOf.get(id)!.map((n) => row.get(n) ?? 0);
      return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : 0;
    };
    column.sort((a, b) => weight(a) - weight(b));
    column.forEach((id, i) => row.set(id, i));
  }
  const position = (id: string) => ({
    x: MARGIN + depth.get(id)! * (NODE_WIDTH + COLUMN_GAP),
    y: MARGIN + row.get(id)! * (NODE_HEIGHT + ROW_GAP),
  });
  const nodes = steps.map((s) => ({ id: s.id, ...position(s.id) }));
  const edges: PlacedEdge[] = [];
  for (const step of steps) {
    for (const need of needsOf.get(step.id)!) {
      if (depth.get(need)! >= depth.get(step.id)!) continue; // part of a cycle
      const from = position(need);
      const to = position(step.id);
      const [x1, y1, x2, y2] = [from.x + NODE_WIDTH, from.y + NODE_HEIGHT / 2, to.x, to.y + NODE_HEIGHT / 2];
      const bend = (x2 - x1) / 2;
      edges.push({ from: need, to: step.id, path: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}` });
    }
  }
  const tallest = Math.max(0, ...columns.map((c) => c?.length ?? 0));
  return {
    nodes,
    edges,
    width: 2 * MARGIN + Math.max(0, columns.length * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP),
    height: 2 * MARGIN + Math.max(0, tallest * (NODE_HEIGHT + ROW_GAP) - ROW_GAP),
  };
}

/**
 * Each step's column: 0 without needs, else one more than the deepest need (a need on a cycle counts as
 * none). Walked with a stack of its own, not recursion: a chain of thousands of references is no
 * deeper for it than a short one.
 */
function depths(steps: readonly DagInput[], needsOf: Map<string, string[]>): Map<string, number> {
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  for (const step of steps) {
    const stack = [step.id];
    while (stack.length) {
      const id = stack[stack.length - 1];
      if (depth.has(id)) {
        stack.pop();
        continue;
      }
      visiting.add(id);
      const pending = needsOf.get(id)!.filter((n) => !depth.has(n) && !visiting.has(n));
      if (pending.length) {
        stack.push(...pending);
        continue;
      }
      // A need still being visited is on a cycle: it counts as none.
      depth.set(id, Math.max(-1, ...needsOf.get(id)!.map((n) => depth.get(n) ?? -1)) + 1);
      visiting.delete(id);
      stack.pop();
    }
  }
  return depth;
}
