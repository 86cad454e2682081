import { isTerminalStep } from '../../engine/run-state.ts';
import { CopyButtons, CsrfForm, ActionsHeader } from './layout.tsx';
import { ShortId, StatusBadge, When } from './format.tsx';
import { type DagStep, StepGraph } from './dag.tsx';
import { PlanCounts, type PlanView } from './plan.tsx';

export interface RunView {
  id: string;
  status: string;
  description?: string;
  action?: string | null;
  attemptEpoch: number;
  isCancellable?: boolean;
  attachedEntityId?: string | null;
  variantName?: string;
  createdById?: string | null;
  createdAt: string;
  startedAt?: string | null;
  completedAt?: string | null;
  error?: { code?: string; message?: string } | null;
  commitSha?: string | null;
  triggerMetadata?: { trigger_given_id?: string; webhook_event?: string } | null;
  input?: Record<string, unknown> | null;
  data?: { module_input?: Record<string, unknown>; module_version_id?: string } | null;
}

export interface StepView {
  id: string;
  stepId: string;
  stepName: string;
  stepType: string;
  status: string;
  attemptEpoch: number;
  retryAttempt: number;
  startedAt?: string | null;
  completedAt?: string | null;
  error?: { code?: string; message?: string } | null;
  outputData?: Record<string, unknown> | null;
  /** An approval step's decision: `approvedBy` or `rejectedBy`, and `decidedAt`. */
  statusDetail?: { approvedBy?: string; rejectedBy?: string; decidedAt?: string } | null;
}

export interface TransitionView {
  id: string;
  stepExecutionId?: string;
  fromStatus?: string;
  toStatus: string;
  reason: string;
  actor?: string;
  createdAt: string;
}

/** A step of the run's pipeline version, as its config declares it. */
export interface PipelineStepView {
  id: string;
  name: string;
  needs?: string[];
  /** What an approval step asks of its approver (its `with.message`). */
  message?: string;
}

export interface RunPageProps {
  orgPath: string;
  run: RunView;
  stackName?: string;
  steps: StepView[];
  pipelineSteps: PipelineStepView[];
  /** Who is looking: their own actions read "you". */
  viewerId: string;
  /** The organization's members by user id (their name or email), for who did what. */
  people: Record<string, string>;
  transitions: TransitionView[];
  /** The viewer may approve, reject, cancel and retry (the API's run:operate). */
  canOperate: boolean;
  csrfToken: string;
}

/**
 * The run page. While the run is not finished, its body is kept current by the page's one event
 * stream (htmx's SSE extension swaps each `run` event in), which ends with a `done` event.
 */
export function RunPage(props: RunPageProps & { liveUrl?: string }) {
  if (!props.liveUrl) return <RunBody {...props} />;
  return (
    <div hx-ext="sse" sse-connect={props.liveUrl} sse-swap="run" sse-close="done" aria-live="polite">
      <RunBody {...props} />
    </div>
  );
}

/** How the run started: a push or a trigger of the stack's code source, or a person (or service account). */
/** An approval step's decision: who made it, and when. */
function Decision({ step, who }: { step: StepView; who: (actor?: string) => string | undefined }) {
  const detail = step.statusDetail;
  const by = detail?.approvedBy ?? detail?.rejectedBy;
  if (!by || by === 'autoapprove') return by ? <div class="muted">Approved automatically</div> : null;
  return (
    <div class="muted">
      {detail?.approvedBy ? 'Approved' : 'Rejected'} by {who(by)} <When at={detail?.decidedAt} />
    </div>
  );
}

function Trigger({ run, startedBy }: { run: RunView; startedBy?: string }) {
  const parts: string[] = [];
  if (run.triggerMetadata?.webhook_event) parts.push(`Git ${run.triggerMetadata.webhook_event} event`);
  if (run.triggerMetadata?.trigger_given_id) parts.push(`trigger ${run.triggerMetadata.trigger_given_id}`);
  if (!parts.length) parts.push('started by hand');
  return (
    <>
      {parts.join(', ')}
      {startedBy && <span class="muted"> · by {startedBy}</span>}
    </>
  );
}

/** The inputs the run was started with, and a module deploy's inputs, as JSON. */
function RunInputs({ run }: { run: RunView }) {
  const inputs = run.input && Object.keys(run.input).length ? run.input : undefined;
  const moduleInput = run.data?.module_input;
  if (!inputs && !moduleInput) return null;
  return (
    <details class="inputs">
      <summary>Inputs</summary>
      {inputs && <pre>{JSON.stringify(inputs, null, 2)}</pre>}
      {moduleInput && (
        <>
          <p>
            Module inputs
            {run.data?.module_version_id && (
              <>
                {' '}
                (version <code>{run.data.module_version_id}</code>)
              </>
            )}
          </p>
          <pre>{JSON.stringify(moduleInput, null, 2)}</pre>
        </>
      )}
    </details>
  );
}

/** The pipeline's steps with the status of each one's latest execution in this attempt. */
function graphSteps(pipelineSteps: PipelineStepView[], executions: StepView[]): DagStep[] {
  const latest = new Map<string, StepView>();
  for (const e of executions) if ((latest.get(e.stepId)?.retryAttempt ?? -1) <= e.retryAttempt) latest.set(e.stepId, e);
  return pipelineSteps.map((s) => ({ id: s.id, name: s.name, needs: s.needs, status: latest.get(s.id)?.status ?? 'PENDING' }));
}

/**
 * Each step's log, collapsed but for the one a reader wants first: the step that failed, else the first
 * that has not ended. A log is read once its step is opened, and follows new output until the step
 * ends. Each is kept as it is (hx-preserve) when the live body is swapped, so an update of the run
 * keeps what the reader opened and scrolled, and adds the logs of steps that started since.
 */
function StepLogs({ orgPath, steps }: { orgPath: string; steps: StepView[] }) {
  const open = steps.find((s) => s.status === 'FAILED') ?? steps.find((s) => !isTerminalStep(s.status));
  return (
    <section aria-labelledby="logs-heading">
      <h2 id="logs-heading">Logs</h2>
      {steps.map((step) => {
        const base = `${orgPath}/steps/${encodeURIComponent(step.id)}`;
        return (
          <details key={step.id} id={`log-${step.id}`} hx-preserve="true" class="step-log" open={step === open}>
            <summary>
              {step.stepName} <span class="muted">· {step.stepType}</span>
            </summary>
            <p class="log-links">
              <a href={`${base}/logs`}>Open the whole log</a> · <a href={`${base}/logs/raw`}>Raw log</a>
            </p>
            <div class="log">
              <p
                class="log-end muted"
                hx-get={`${base}/log-lines?after=0&view=embed&chunk=1`}
                // The log open from the start is read at once, wherever it is on the page; another, once opened.
                hx-trigger={step === open ? 'load' : 'intersect once'}
                hx-swap="outerHTML"
              >
                <a href={`${base}/logs`}>Lines of {step.stepName}</a>
              </p>
            </div>
          </details>
        );
      })}
    </section>
  );
}

export function RunBody({ orgPath, run, stackName, steps, pipelineSteps, transitions, canOperate, csrfToken, viewerId, people }: RunPageProps) {
  const who = (actor?: string) => (actor === viewerId ? 'you' : actor && (people[actor] ?? actor));
  const messages = new Map(pipelineSteps.map((s) => [s.id, s.message]));
  const stepNames = new Map(steps.map((s) => [s.id, s.stepName]));
  const action = (verb: string) => `${orgPath}/runs/${run.id}/${verb}`;
  return (
    <>
      <h1>
        Run <ShortId id={run.id} /> <StatusBadge status={run.status} /> <CopyButtons id={run.id} what="run" />
      </h1>
      <dl class="facts">
        <dt>Stack</dt>
        <dd>
          {run.attachedEntityId ? <a href={`${orgPath}/runs?stackId=${encodeURIComponent(run.attachedEntityId)}`}>{stackName ?? run.attachedEntityId}</a> : '—'}
        </dd>
        <dt>Pipeline</dt>
        <dd>
          {run.variantName ?? '—'} {run.action ? `(${run.action})` : ''}
        </dd>
        <dt>Description</dt>
        <dd>{run.description || '—'}</dd>
        <dt>Commit</dt>
        <dd>{run.commitSha ? <code title={run.commitSha}>{run.commitSha.slice(0, 12)}</code> : <span class="muted">—</span>}</dd>
        <dt>Trigger</dt>
        <dd>
          <Trigger run={run} startedBy={who(transitions.find((t) => !t.stepExecutionId)?.actor)} />
        </dd>
        <dt>Attempt</dt>
        <dd>{run.attemptEpoch}</dd>
        <dt>Created</dt>
        <dd>
          <When at={run.createdAt} />
        </dd>
        <dt>Finished</dt>
        <dd>
          <When at={run.completedAt} />
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{run.id}</code>
        </dd>
      </dl>
      {run.error?.message && (
        <p class="error" role="alert">
          {run.error.message} {run.error.code && <code>{run.error.code}</code>}
        </p>
      )}
      <RunInputs run={run} />
      {canOperate && (
        <div class="actions">
          {run.isCancellable && (
            <CsrfForm action={action('cancel')} csrfToken={csrfToken}>
              <button type="submit" class="danger">
                Cancel run
              </button>
            </CsrfForm>
          )}
          {(run.status === 'FAILED' || run.status === 'CANCELLED') && (
            <CsrfForm action={action('retry')} csrfToken={csrfToken}>
              <button type="submit">Retry run</button>
            </CsrfForm>
          )}
        </div>
      )}
      <h2>Steps</h2>
      <StepGraph steps={graphSteps(pipelineSteps, steps)} />
      <table>
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">Type</th>
            <th scope="col">Status</th>
            <th scope="col">Started</th>
            <th scope="col">Finished</th>
            <ActionsHeader />
          </tr>
        </thead>
        <tbody>
          {steps.map((step) => (
            <tr key={step.id} id={`step-${step.stepId}`}>
              <td>
                {step.stepName}
                {step.status === 'WAITING_FOR_APPROVAL' && messages.get(step.stepId) && <div>{messages.get(step.stepId)}</div>}
                <Decision step={step} who={who} />
                {step.error?.message && <div class="muted">{step.error.message}</div>}
                {step.stepType === 'opentofu.plan' && step.status === 'SUCCEEDED' && step.outputData && (
                  <div>
                    <PlanCounts plan={step.outputData as unknown as PlanView} /> ·{' '}
                    <a href={`${orgPath}/steps/${encodeURIComponent(step.id)}/plan`}>View the plan</a>
                  </div>
                )}
              </td>
              <td>
                <code>{step.stepType}</code>
              </td>
              <td>
                <StatusBadge status={step.status} />
              </td>
              <td>
                <When at={step.startedAt} />
              </td>
              <td>
                <When at={step.completedAt} />
              </td>
              <td>
                {canOperate && step.status === 'WAITING_FOR_APPROVAL' && (
                  <span class="actions">
                    <CsrfForm action={`${orgPath}/steps/${step.id}/approve?run=${run.id}`} csrfToken={csrfToken}>
                      <button type="submit">Approve {step.stepName}</button>
                    </CsrfForm>
                    <CsrfForm action={`${orgPath}/steps/${step.id}/reject?run=${run.id}`} csrfToken={csrfToken}>
                      <button type="submit" class="danger">
                        Reject
                      </button>
                    </CsrfForm>
                  </span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <StepLogs orgPath={orgPath} steps={steps} />
      <h2>History</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">What</th>
            <th scope="col">Change</th>
            <th scope="col">Why</th>
            <th scope="col">By</th>
          </tr>
        </thead>
        <tbody>
          {transitions.map((t) => (
            <tr key={t.id}>
              <td>
                <When at={t.createdAt} />
              </td>
              <td>{t.stepExecutionId ? (stepNames.get(t.stepExecutionId) ?? 'step') : 'run'}</td>
              <td>
                {t.fromStatus ? <StatusBadge status={t.fromStatus} /> : null} → <StatusBadge status={t.toStatus} />
              </td>
              <td>{t.reason}</td>
              <td>{who(t.actor) ?? <span class="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
