// A plan step's changes, from what the step kept of `tofu show -json`: counts, each resource's action,
// and the attributes that change, before and after (sensitive values arrive already hidden).

import { ShortId, StatusBadge } from './format.tsx';
import { CopyButtons } from './layout.tsx';

export interface PlanAttributeView {
  name: string;
  before?: string;
  after?: string;
}

export interface PlanChangeView {
  address: string;
  action: string;
  attributes?: PlanAttributeView[];
}

export interface PlanView {
  add: number;
  change: number;
  destroy: number;
  hasChanges: boolean;
  isDestroy?: boolean;
  resourceChanges?: PlanChangeView[];
  attributesTruncated?: boolean;
}

export interface PlanFilter {
  address?: string;
  action?: string;
}

export interface PlanPageProps {
  orgPath: string;
  step: { id: string; stepName: string; status: string; pipelineRunId: string };
  logUrl: string;
  /** Undefined until the step has made its plan. */
  plan?: PlanView;
  filter: PlanFilter;
  planUrl: string;
}

export const PLAN_ACTIONS = ['create', 'update', 'replace', 'delete'] as const;

/** An action as a badge that says it in words as well as colour. */
export function ActionBadge({ action }: { action: string }) {
  return <span class={`action action-${action}`}>{action}</span>;
}

/** The counts as `tofu plan` prints them. */
export function PlanCounts({ plan }: { plan: Pick<PlanView, 'add' | 'change' | 'destroy' | 'hasChanges'> }) {
  if (!plan.hasChanges) return <span class="muted">No changes</span>;
  return (
    <span class="plan-counts">
      <span class="action action-create">+{plan.add} to add</span> <span class="action action-update">~{plan.change} to change</span>{' '}
      <span class="action action-delete">−{plan.destroy} to destroy</span>
    </span>
  );
}

export function PlanPage({ orgPath, step, logUrl, plan, filter, planUrl }: PlanPageProps) {
  return (
    <>
      <h1>
        Plan of {step.stepName} <StatusBadge status={step.status} /> <CopyButtons id={step.id} what="step" />
      </h1>
      <p class="muted">
        Run{' '}
        <a href={`${orgPath}/runs/${encodeURIComponent(step.pipelineRunId)}`}>
          <ShortId id={step.pipelineRunId} />
        </a>{' '}
        · <a href={logUrl}>Raw output</a>
      </p>
      {plan ? <PlanChanges plan={plan} filter={filter} planUrl={planUrl} /> : <p>This step has made no plan yet: its status is {step.status.toLowerCase()}.</p>}
    </>
  );
}

function PlanChanges({ plan, filter, planUrl }: { plan: PlanView; filter: PlanFilter; planUrl: string }) {
  const needle = filter.address?.toLowerCase();
  const changes = (plan.resourceChanges ?? []).filter(
    (c) => (!needle || c.address.toLowerCase().includes(needle)) && (!filter.action || c.action === filter.action),
  );
  return (
    <>
      <p>
        <PlanCounts plan={plan} />
        {plan.isDestroy && <strong> · destroys the stack</strong>}
      </p>
      <search>
        <form method="get" action={planUrl} class="filter-form">
          <div>
            <label for="plan-address">Address</label>
            <input id="plan-address" type="text" name="address" value={filter.address ?? ''} maxLength={200} />
          </div>
          <div>
            <label for="plan-action">Action</label>
            <select id="plan-action" name="action">
              <option value="">All</option>
              {PLAN_ACTIONS.map((a) => (
                <option key={a} value={a} selected={filter.action === a}>
                  {a}
                </option>
              ))}
            </select>
          </div>
          <button type="submit">Filter</button>
        </form>
      </search>
      {plan.resourceChanges === undefined ? (
        <p>This plan was made before Plinth kept each change: its raw output has them.</p>
      ) : (
        <>
          <h2>
            {changes.length} of {plan.resourceChanges.length} changes
          </h2>
          {plan.attributesTruncated && <p class="muted">The plan is large: some changes list no attributes here; the raw output has them all.</p>}
          {changes.map((change) => (
            <details key={change.address} class="plan-change">
              <summary>
                <ActionBadge action={change.action} /> <code>{change.address}</code>
              </summary>
              <ChangedAttributes change={change} />
            </details>
          ))}
        </>
      )}
    </>
  );
}

function ChangedAttributes({ change }: { change: PlanChangeView }) {
  if (change.action === 'delete') return <p class="muted">Deleted with every attribute.</p>;
  if (!change.attributes) return <p class="muted">Not kept here: see the raw output.</p>;
  if (change.attributes.length === 0) return <p class="muted">No attribute changes.</p>;
  return <AttributeTable attributes={change.attributes} />;
}

/** Attributes side by side, before and after; a missing value is a dash. */
export function AttributeTable({ attributes }: { attributes: PlanAttributeView[] }) {
  return (
    <table class="attributes">
      <thead>
        <tr>
          <th scope="col">Attribute</th>
          <th scope="col">Before</th>
          <th scope="col">After</th>
        </tr>
      </thead>
      <tbody>
        {attributes.map((a) => (
          <tr key={a.name}>
            <td>
              <code>{a.name}</code>
            </td>
            <td>{a.before === undefined ? <span class="muted">—</span> : <code>{a.before}</code>}</td>
            <td>{a.after === undefined ? <span class="muted">—</span> : <code>{a.after}</code>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
