// Stacks: the list with a form for a new one, and a stack's page (trigger a run, its variables with the
// sensitive ones write-only, its outputs, recent runs and, for those who may read state, its versions;
// its settings: rename, change its code, delete).

import { ConfirmDelete } from './confirm.tsx';
import { CopyButtons, CsrfForm } from './layout.tsx';
import { ShortId, StatusBadge, When, withQuery } from './format.tsx';

export interface StackView {
  id: string;
  name: string;
  projectId: string;
  environmentId: string;
  variables: Record<string, unknown>;
  source?: { codeSourceId?: string; ref?: string; path?: string; onPush?: string };
  latestRunId?: string;
  firstAppliedAt?: string;
  output?: Record<string, unknown>;
  moduleInstanceId?: string;
  changePipelineId?: string;
  destroyPipelineId?: string;
}

export interface EnvironmentChoice {
  id: string;
  name: string;
  projectId: string;
  projectName: string;
}

export interface NamedRecord {
  id: string;
  name: string;
}

/** A form's failure, shown above it: the API's message and what it listed. */
export function FormError({ error }: { error?: { message: string; details?: string[] } }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <p>{error.message}</p>
      {error.details && error.details.length > 0 && (
        <ul>
          {error.details.map((d) => (
            <li key={d}>{d}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

export interface StacksPageProps {
  orgPath: string;
  stacks: StackView[];
  environments: EnvironmentChoice[];
  codeSources: NamedRecord[];
  filter: { environmentId?: string };
  nextCursor?: string;
  canWrite: boolean;
  csrfToken: string;
  formError?: { message: string; details?: string[] };
}

const environmentLabel = (env: EnvironmentChoice | undefined, id: string) => (env ? `${env.projectName} / ${env.name}` : id);

export function StacksPage(props: StacksPageProps) {
  const envs = new Map(props.environments.map((e) => [e.id, e]));
  return (
    <>
      <h1>Stacks</h1>
      <form method="get" action={`${props.orgPath}/stacks`} class="filter-form">
        <div>
          <label for="stacks-env">Environment</label>
          <select id="stacks-env" name="environmentId">
            <option value="">All</option>
            {props.environments.map((e) => (
              <option key={e.id} value={e.id} selected={props.filter.environmentId === e.id}>
                {environmentLabel(e, e.id)}
              </option>
            ))}
          </select>
        </div>
        <button type="submit">Filter</button>
      </form>
      <table>
        <thead>
          <tr>
            <th scope="col">Stack</th>
            <th scope="col">Environment</th>
            <th scope="col">Code</th>
            <th scope="col">Latest run</th>
          </tr>
        </thead>
        <tbody>
          {props.stacks.map((s) => (
            <tr key={s.id}>
              <td>
                <a href={`${props.orgPath}/stacks/${encodeURIComponent(s.id)}`}>{s.name}</a>
              </td>
              <td>{environmentLabel(envs.get(s.environmentId), s.environmentId)}</td>
              <td>{s.source?.codeSourceId ? <SourceText source={s.source} /> : <span class="muted">none</span>}</td>
              <td>{s.latestRunId ? <a href={`${props.orgPath}/runs/${encodeURIComponent(s.latestRunId)}`}>{<ShortId id={s.latestRunId} />}</a> : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.stacks.length === 0 && <p class="muted">No stacks here yet.</p>}
      {props.nextCursor && (
        <p class="pager">
          <a href={withQuery(`${props.orgPath}/stacks`, { ...props.filter, cursor: props.nextCursor })}>Next page</a>
        </p>
      )}
      {props.canWrite && <NewStackForm {...props} />}
    </>
  );
}

function NewStackForm({ orgPath, environments, codeSources, csrfToken, formError }: StacksPageProps) {
  return (
    <section aria-labelledby="new-stack" class="panel-form">
      <h2 id="new-stack">New stack</h2>
      {environments.length === 0 ? (
        <p>
          A stack lives in an environment: <a href={`${orgPath}/environments`}>create one first</a>.
        </p>
      ) : (
        <CsrfForm action={`${orgPath}/stacks`} csrfToken={csrfToken}>
          <FormError error={formError} />
          <label for="stack-name">Name</label>
          <input id="stack-name" type="text" name="name" required maxLength={255} />
          <label for="stack-env">Environment</label>
          <select id="stack-env" name="environmentId" required>
            {environments.map((e) => (
              <option key={e.id} value={e.id}>
                {environmentLabel(e, e.id)}
              </option>
            ))}
          </select>
          <label for="stack-source">Code source</label>
          <select id="stack-source" name="codeSourceId">
            <option value="">None (the pipeline's own steps only)</option>
            {codeSources.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
          <label for="stack-ref">Branch or tag</label>
          <input id="stack-ref" type="text" name="ref" maxLength={255} placeholder="the code source's default branch" />
          <label for="stack-path">Directory in the repository</label>
          <input id="stack-path" type="text" name="path" maxLength={1024} placeholder="the root" />
          <button type="submit">Create stack</button>
        </CsrfForm>
      )}
    </section>
  );
}

function SourceText({ source }: { source: NonNullable<StackView['source']> }) {
  return (
    <code>
      {source.ref ?? 'default branch'}
      {source.path ? `:${source.path}` : ''}
    </code>
  );
}

export interface StateVersionView {
  id: string;
  serial: number;
  runId?: string;
  principalId: string;
  createdAt: string;
  sizeBytes: number;
}

export interface RecentRun {
  id: string;
  status: string;
  updatedAt?: string;
  description?: string;
  action?: string;
  createdAt: string;
}

/** The stack's newest runs: the part of its page that follows them live. */
export function StackRuns({ orgPath, runs }: { orgPath: string; runs: RecentRun[] }) {
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Status</th>
          <th scope="col">Description</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.id}>
            <td>
              <a href={`${orgPath}/runs/${encodeURIComponent(r.id)}`}>
                <ShortId id={r.id} />
              </a>{' '}
              <span class="muted">{r.action}</span>
            </td>
            <td>
              <StatusBadge status={r.status} />
            </td>
            <td>{r.description || <span class="muted">—</span>}</td>
            <td>
              <When at={r.createdAt} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Which of the stack page's forms a refusal belongs to. */
export type StackForm = 'run' | 'variables' | 'sensitive' | 'rename' | 'code' | 'delete';

/** What a refused form of the stack page held: the reader's text is not thrown away (a sensitive value is never kept). */
export interface StackTyped {
  variables?: string;
  name?: string;
  codeSourceId?: string;
  ref?: string;
  path?: string;
  onPush?: string;
  confirm?: string;
}

/** What a push to the tracked branch starts, in words (the API's `onPush`). */
const PUSH_WORDS: Record<string, string> = {
  apply: 'A run that plans and applies',
  plan: 'A run that only plans',
  none: 'Nothing',
};

export interface StackPageProps {
  orgPath: string;
  stack: StackView;
  environment?: EnvironmentChoice;
  /** The code sources the code form offers; given only with that form. */
  codeSources?: NamedRecord[];
  sensitiveNames: string[];
  runs: RecentRun[];
  /** The stream that sends the recent runs again whenever one comes or changes. */
  liveUrl?: string;
  /** Newest first; undefined when the viewer may not see the state's versions. */
  stateVersions?: StateVersionView[];
  /** The organization's members by user id, for who wrote each state version. */
  people: Record<string, string>;
  canOperate: boolean;
  canWrite: boolean;
  csrfToken: string;
  formError?: { form: StackForm; message: string; details?: string[] };
  typed?: StackTyped;
}

export function StackPage(props: StackPageProps) {
  const { orgPath, stack, environment, csrfToken } = props;
  const base = `${orgPath}/stacks/${encodeURIComponent(stack.id)}`;
  const errorFor = (form: StackForm) => (props.formError?.form === form ? props.formError : undefined);
  const managed = Boolean(stack.moduleInstanceId);
  return (
    <>
      <h1>
        {stack.name} <CopyButtons id={stack.id} what="stack" />
      </h1>
      <dl class="facts">
        <dt>Environment</dt>
        <dd>{environment ? environmentLabel(environment, stack.environmentId) : stack.environmentId}</dd>
        <dt>Code</dt>
        <dd>{stack.source?.codeSourceId ? <SourceText source={stack.source} /> : <span class="muted">no code source</span>}</dd>
        <dt>Pipelines</dt>
        <dd>
          {stack.changePipelineId && <a href={`${orgPath}/pipelines/${encodeURIComponent(stack.changePipelineId)}`}>change</a>}
          {stack.destroyPipelineId && (
            <>
              {' · '}
              <a href={`${orgPath}/pipelines/${encodeURIComponent(stack.destroyPipelineId)}`}>destroy</a>
            </>
          )}
        </dd>
        <dt>First applied</dt>
        <dd>
          <When at={stack.firstAppliedAt} />
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{stack.id}</code>
        </dd>
      </dl>
      {managed && <p class="muted">A module instance owns this stack: it changes through the instance.</p>}

      {props.canOperate && !managed && (
        <section aria-labelledby="start-run" class="panel-form">
          <h2 id="start-run">Start a run</h2>
          <CsrfForm action={`${base}/runs`} csrfToken={csrfToken}>
            <FormError error={errorFor('run')} />
            <label for="run-action">What to run</label>
            <select id="run-action" name="action">
              <option value="apply">Plan and apply (asks for approval when the plan changes anything)</option>
              <option value="plan">Plan only</option>
              <option value="destroy">Destroy</option>
            </select>
            <label for="run-description">Description</label>
            <input id="run-description" type="text" name="description" maxLength={1000} />
            <button type="submit">Start run</button>
          </CsrfForm>
        </section>
      )}

      <h2>Recent runs</h2>
      {props.liveUrl ? (
        <div hx-ext="sse" sse-connect={props.liveUrl} sse-swap="runs" sse-close="done" aria-live="polite">
          <StackRuns orgPath={orgPath} runs={props.runs} />
        </div>
      ) : (
        <StackRuns orgPath={orgPath} runs={props.runs} />
      )}
      <p>
        <a href={`${orgPath}/runs?stackId=${encodeURIComponent(stack.id)}`}>Every run of this stack</a>
      </p>

      <h2>Outputs</h2>
      {stack.output && Object.keys(stack.output).length ? (
        <table>
          <tbody>
            {Object.entries(stack.output).map(([name, value]) => (
              <tr key={name}>
                <th scope="row">
                  <code>{name}</code>
                </th>
                <td>
                  <code>{typeof value === 'string' ? value : JSON.stringify(value)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">None yet: a stack has outputs once an apply has recorded them.</p>
      )}

      <h2>Variables</h2>
      {props.canWrite && !managed ? (
        <CsrfForm action={`${base}/variables`} csrfToken={csrfToken}>
          <FormError error={errorFor('variables')} />
          <label for="variables">OpenTofu input variables, as a JSON object</label>
          <textarea id="variables" name="variables" rows={8} class="mono">
            {(errorFor('variables') && props.typed?.variables) ?? JSON.stringify(stack.variables ?? {}, null, 2)}
          </textarea>
          <button type="submit">Save variables</button>
        </CsrfForm>
      ) : (
        <pre class="mono">{JSON.stringify(stack.variables ?? {}, null, 2)}</pre>
      )}

      <h2>Sensitive variables</h2>
      <p class="muted">Their values are kept sealed and never shown: set one again to change it.</p>
      <ul class="plain">
        {props.sensitiveNames.map((name) => (
          <li key={name}>
            <code>{name}</code>
            {props.canWrite && !managed && (
              <CsrfForm action={`${base}/sensitive-variables/${encodeURIComponent(name)}/delete`} csrfToken={csrfToken}>
                <button type="submit" class="danger">
                  Remove {name}
                </button>
              </CsrfForm>
            )}
          </li>
        ))}
      </ul>
      {props.sensitiveNames.length === 0 && <p class="muted">None.</p>}
      {props.canWrite && !managed && (
        <CsrfForm action={`${base}/sensitive-variables`} csrfToken={csrfToken}>
          <FormError error={errorFor('sensitive')} />
          <label for="sensitive-name">Name</label>
          <input id="sensitive-name" type="text" name="name" required maxLength={128} autocomplete="off" />
          <label for="sensitive-value">Value</label>
          <input id="sensitive-value" type="password" name="value" required autocomplete="new-password" />
          <button type="submit">Set sensitive variable</button>
        </CsrfForm>
      )}

      {props.stateVersions && <StateVersions base={base} orgPath={orgPath} versions={props.stateVersions} people={props.people} />}

      {props.canWrite && !managed && <StackSettings {...props} />}
    </>
  );
}

/** Renaming the stack, changing its code and deleting it: folded until opened, or until the API refused one of them. */
function StackSettings({ orgPath, stack, codeSources = [], csrfToken, formError, typed }: StackPageProps) {
  const base = `${orgPath}/stacks/${encodeURIComponent(stack.id)}`;
  const refused = formError && ['rename', 'code', 'delete'].includes(formError.form) ? formError : undefined;
  const errorFor = (form: StackForm) => (refused?.form === form ? refused : undefined);
  // A refused code form shows what was typed; otherwise the stack's code as it is.
  const code = errorFor('code') ? typed : stack.source;
  const sourceId = code?.codeSourceId ?? '';
  const onPush = code?.onPush ?? 'apply';
  const what = `the stack ${stack.name}`;
  return (
    <section aria-labelledby="stack-settings" class="panel-form">
      <h2 id="stack-settings">Settings</h2>
      <details class="manage" open={refused !== undefined}>
        <summary>Rename {stack.name}, change its code or delete it</summary>
        <CsrfForm action={`${base}/rename`} csrfToken={csrfToken}>
          <FormError error={errorFor('rename')} />
          <label for="settings-name">New name of {what}</label>
          <input id="settings-name" type="text" name="name" required maxLength={255} value={errorFor('rename') ? (typed?.name ?? '') : stack.name} />
          <button type="submit" class="secondary">
            Rename
          </button>
        </CsrfForm>
        <CsrfForm action={`${base}/code`} csrfToken={csrfToken}>
          <FormError error={errorFor('code')} />
          <label for="settings-source">Code source</label>
          <select id="settings-source" name="codeSourceId">
            <option value="">None (the pipeline's own steps only)</option>
            {codeSources.map((c) => (
              <option key={c.id} value={c.id} selected={c.id === sourceId}>
                {c.name}
              </option>
            ))}
            {/* A source beyond the list's first page is still the stack's: it stays chosen. */}
            {sourceId && !codeSources.some((c) => c.id === sourceId) && (
              <option value={sourceId} selected>
                {sourceId}
              </option>
            )}
          </select>
          <label for="settings-ref">Branch or tag</label>
          <input id="settings-ref" type="text" name="ref" maxLength={255} placeholder="the code source's default branch" value={code?.ref ?? ''} />
          <label for="settings-path">Directory in the repository</label>
          <input id="settings-path" type="text" name="path" maxLength={1024} placeholder="the root" value={code?.path ?? ''} />
          <label for="settings-on-push">When a push to that branch touches the directory, start</label>
          <select id="settings-on-push" name="onPush">
            {Object.entries(PUSH_WORDS).map(([value, words]) => (
              <option key={value} value={value} selected={value === onPush}>
                {words}
              </option>
            ))}
          </select>
          <button type="submit" class="secondary">
            Save code
          </button>
        </CsrfForm>
        <ConfirmDelete
          action={`${base}/delete`}
          csrfToken={csrfToken}
          id="delete-stack"
          what={what}
          expected={stack.name}
          error={errorFor('delete')}
          typed={errorFor('delete') ? typed?.confirm : undefined}
        />
      </details>
    </section>
  );
}

function StateVersions({
  base,
  orgPath,
  versions: newestFirst,
  people,
}: {
  base: string;
  orgPath: string;
  versions: StateVersionView[];
  people: Record<string, string>;
}) {
  return (
    <section aria-labelledby="state-versions">
      <h2 id="state-versions">State versions</h2>
      {newestFirst.length === 0 ? (
        <p class="muted">No state yet.</p>
      ) : (
        <>
          <table>
            <thead>
              <tr>
                <th scope="col">Serial</th>
                <th scope="col">Written by</th>
                <th scope="col">Run</th>
                <th scope="col">When</th>
                <th scope="col">Size</th>
              </tr>
            </thead>
            <tbody>
              {newestFirst.map((v) => (
                <tr key={v.id}>
                  <td>{v.serial}</td>
                  <td>{people[v.principalId] ?? <code>{v.principalId}</code>}</td>
                  <td>{v.runId ? <a href={`${orgPath}/runs/${encodeURIComponent(v.runId)}`}>{<ShortId id={v.runId} />}</a> : '—'}</td>
                  <td>
                    <When at={v.createdAt} />
                  </td>
                  <td>{v.sizeBytes} bytes</td>
                </tr>
              ))}
            </tbody>
          </table>
          {newestFirst.length > 1 && (
            <form method="get" action={`${base}/state-diff`} class="filter-form">
              <div>
                <label for="diff-from">Compare serial</label>
                <select id="diff-from" name="from">
                  {newestFirst.map((v, i) => (
                    <option key={v.id} value={v.id} selected={i === 1}>
                      {v.serial}
                    </option>
                  ))}
                </select>
              </div>
              <div>
                <label for="diff-to">with serial</label>
                <select id="diff-to" name="to">
                  {newestFirst.map((v, i) => (
                    <option key={v.id} value={v.id} selected={i === 0}>
                      {v.serial}
                    </option>
                  ))}
                </select>
              </div>
              <button type="submit">Compare</button>
            </form>
          )}
        </>
      )}
    </section>
  );
}
