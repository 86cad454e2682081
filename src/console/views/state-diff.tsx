import type { StateResourceDiff } from '../state-diff.ts';
import { CopyButtons } from './layout.tsx';
import { AttributeTable } from './plan.tsx';

export interface StateDiffPageProps {
  stackId: string;
  stackUrl: string;
  stackName: string;
  from: { serial: number };
  to: { serial: number };
  diffs: StateResourceDiff[];
}

/** What changed in a stack's state between two of its versions. */
export function StateDiffPage({ stackId, stackUrl, stackName, from, to, diffs }: StateDiffPageProps) {
  return (
    <>
      <h1>
        State of {stackName}: serial {from.serial} → {to.serial} <CopyButtons id={stackId} what="stack" />
      </h1>
      <p>
        <a href={stackUrl}>Back to the stack</a>
      </p>
      {diffs.length === 0 && <p>The two versions hold the same resources with the same attributes.</p>}
      {diffs.map((d) => (
        <details key={d.address} class="plan-change" open={d.change === 'changed'}>
          <summary>
            <span class={`action action-${d.change === 'added' ? 'create' : d.change === 'removed' ? 'delete' : 'update'}`}>{d.change}</span>{' '}
            <code>{d.address}</code>
          </summary>
          {d.attributes ? <AttributeTable attributes={d.attributes} /> : <p class="muted">The whole resource was {d.change}.</p>}
        </details>
      ))}
    </>
  );
}
