// A run's steps drawn as their pipeline's graph, laid out on the server (dag-layout.ts): each box is a
// step with its status in words, each curve a `needs`. The steps table beside it holds the same data for
// those who do not see the picture.

import { layoutDag, NODE_HEIGHT, NODE_WIDTH } from '../dag-layout.ts';

export interface DagStep {
  id: string;
  name: string;
  needs?: readonly string[];
  /** The status of the step's execution, or PENDING when it has none yet. */
  status: string;
}

/** Characters of a step's name that fit in a box; the whole name is in its title. */
const NAME_CHARS = 22;

export function StepGraph({ steps }: { steps: DagStep[] }) {
  const layout = layoutDag(steps);
  const byId = new Map(steps.map((s) => [s.id, s]));
  return (
    <figure class="dag">
      <svg
        width={layout.width}
        height={layout.height}
        viewBox={`0 0 ${layout.width} ${layout.height}`}
        role="img"
        aria-labelledby="dag-caption"
        xmlns="http://www.w3.org/2000/svg"
      >
        <title>The pipeline's steps</title>
        {layout.edges.map((edge) => (
          <path key={`${edge.from}>${edge.to}`} class="edge" d={edge.path} />
        ))}
        {layout.nodes.map((node) => {
          const step = byId.get(node.id)!;
          const name = step.name.length > NAME_CHARS ? `${step.name.slice(0, NAME_CHARS - 1)}…` : step.name;
          return (
            <g key={node.id} class={`node status-${step.status}`} transform={`translate(${node.x},${node.y})`}>
              <title>{`${step.name}: ${words(step.status)}`}</title>
              <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx="6" />
              <text class="name" x="10" y="18">
                {name}
              </text>
              <text class="state" x="10" y="35">
                {words(step.status)}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption id="dag-caption" class="muted">
        The pipeline's steps in the order they need each other: {steps.map((s) => `${s.name} ${words(s.status)}`).join(', ')}.
      </figcaption>
    </figure>
  );
}

const words = (status: string) => status.replaceAll('_', ' ').toLowerCase();
