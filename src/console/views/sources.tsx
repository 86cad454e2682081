// Where code comes from (code sources and self-hosted Git servers, with forms for new ones and to delete
// each) and the default values an environment resolves, each with where it comes from.

import { GIT_PROVIDERS } from '../../platform/db/enums.ts';
import { ConfirmDelete } from './confirm.tsx';
import { When } from './format.tsx';
import { CopyButtons, CsrfForm, ActionsHeader } from './layout.tsx';
import { FormError } from './stacks.tsx';

export interface CodeSourceView {
  id: string;
  name: string;
  url: string;
  provider: string;
  authType: string;
  hasToken: boolean;
  webhookUrl: string;
  createdAt: string;
}

export interface GitServerView {
  id: string;
  name: string;
  provider: string;
  baseUrl: string;
  connected: boolean;
}

/** What the new Git server form holds, but its client secret: that is never rendered. */
export interface GitServerFields {
  name: string;
  provider: string;
  baseUrl: string;
  clientId: string;
  scopes?: string;
  authorizeUrl?: string;
  tokenUrl?: string;
  userUrl?: string;
}

/** Which form a refusal belongs to. */
/** Which of the page's forms a refusal belongs to: a delete's by the id of the source or server it would delete. */
export type SourcesForm = { form: 'source' } | { form: 'server' } | { form: 'delete'; recordId: string };

export interface CodeSourcesPageProps {
  orgPath: string;
  sources: CodeSourceView[];
  servers: GitServerView[];
  canManage: boolean;
  csrfToken: string;
  formError?: SourcesForm & { message: string; details?: string[] };
  /** What the refused Git server form held (never its secret), or the confirmation typed to delete a source or server. */
  typed?: Partial<GitServerFields> & { confirm?: string };
}

const PROVIDER_WORDS: Record<string, string> = {
  GITHUB: 'GitHub Enterprise Server',
  GITLAB: 'GitLab',
  BITBUCKET: 'Bitbucket',
  GITEA: 'Gitea',
  GENERIC: 'Another provider (give its OAuth URLs below)',
};

export function CodeSourcesPage(props: CodeSourcesPageProps) {
  const { orgPath, sources, servers, canManage, csrfToken } = props;
  const formError = props.formError?.form === 'source' ? props.formError : undefined;
  return (
    <>
      <h1>Code sources</h1>
      <table>
        <thead>
          <tr>
            <th scope="col">Code source</th>
            <th scope="col">Repository</th>
            <th scope="col">Access</th>
            <th scope="col">Push events to</th>
            <th scope="col">Added</th>
            {canManage && <ActionsHeader />}
          </tr>
        </thead>
        <tbody>
          {sources.map((s) => (
            <tr key={s.id}>
              <td>{s.name}</td>
              <td>
                <code>{s.url}</code> <span class="muted">{s.provider.toLowerCase()}</span>
              </td>
              <td>
                {s.authType.toLowerCase().replaceAll('_', ' ')}
                {s.hasToken && <span class="muted"> · token kept sealed</span>}
              </td>
              <td>
                <code>{s.webhookUrl}</code>
              </td>
              <td>
                <When at={s.createdAt} />
              </td>
              {canManage && (
                <td>
                  <DeleteRecord
                    {...props}
                    record={s}
                    action={`${props.orgPath}/code-sources/${encodeURIComponent(s.id)}/delete`}
                    kind="source"
                    what={`the code source ${s.name}`}
                  />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {sources.length === 0 && <p class="muted">None yet.</p>}
      {canManage && (
        <section aria-labelledby="new-source" class="panel-form">
          <h2 id="new-source">New code source</h2>
          <CsrfForm action={`${orgPath}/code-sources`} csrfToken={csrfToken}>
            <FormError error={formError} />
            <label for="source-name">Name</label>
            <input id="source-name" type="text" name="name" required maxLength={255} />
            <label for="source-url">Repository URL (https)</label>
            <input id="source-url" type="text" name="url" required maxLength={2048} />
            <label for="source-token">Access token (leave empty for a public repository; never shown again)</label>
            <input id="source-token" type="password" name="token" maxLength={4096} autocomplete="off" />
            <button type="submit">Add code source</button>
          </CsrfForm>
        </section>
      )}
      <h2>Self-hosted Git servers</h2>
      {servers.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Server</th>
              <th scope="col">Address</th>
              <th scope="col">OAuth</th>
              {canManage && <ActionsHeader />}
            </tr>
          </thead>
          <tbody>
            {servers.map((s) => (
              <tr key={s.id}>
                <td>
                  {s.name} <span class="muted">{s.provider.toLowerCase()}</span>
                </td>
                <td>
                  <code>{s.baseUrl}</code>
                </td>
                <td>{s.connected ? 'connected' : <span class="muted">not connected</span>}</td>
                {canManage && (
                  <td>
                    <DeleteRecord
                      {...props}
                      record={s}
                      action={`${props.orgPath}/code-sources/git-servers/${encodeURIComponent(s.id)}/delete`}
                      kind="server"
                      what={`the Git server ${s.name}`}
                    />
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canManage && <NewServerForm {...props} />}
    </>
  );
}

/** Deleting a code source or a Git server, folded until opened, or until the API refused it (such as while stacks use it). */
function DeleteRecord({
  csrfToken,
  formError,
  typed,
  record,
  action,
  kind,
  what,
}: CodeSourcesPageProps & { record: { id: string; name: string }; action: string; kind: 'source' | 'server'; what: string }) {
  const refused = formError?.form === 'delete' && formError.recordId === record.id ? formError : undefined;
  return (
    <details class="manage" open={refused !== undefined}>
      <summary>Delete {record.name}…</summary>
      <ConfirmDelete
        action={action}
        csrfToken={csrfToken}
        id={`delete-${kind}-${record.id}`}
        what={what}
        expected={record.name}
        error={refused}
        typed={refused ? typed?.confirm : undefined}
      />
    </details>
  );
}

/** A new self-hosted Git server: its OAuth client's secret goes to the API, sealed there, and never comes back. */
function NewServerForm({ orgPath, csrfToken, formError, typed }: CodeSourcesPageProps) {
  const refused = formError?.form === 'server' ? formError : undefined;
  const kept = refused ? typed : undefined;
  return (
    <section aria-labelledby="new-server" class="panel-form">
      <h3 id="new-server">New self-hosted Git server</h3>
      <CsrfForm action={`${orgPath}/code-sources/git-servers`} csrfToken={csrfToken}>
        <FormError error={refused} />
        <label for="server-name">Name</label>
        <input id="server-name" type="text" name="name" required maxLength={255} value={kept?.name} />
        <label for="server-provider">Provider</label>
        <select id="server-provider" name="provider">
          {GIT_PROVIDERS.map((p) => (
            <option key={p} value={p} selected={kept?.provider === p}>
              {PROVIDER_WORDS[p] ?? p}
            </option>
          ))}
        </select>
        <label for="server-base-url">Base URL (https)</label>
        <input id="server-base-url" type="text" name="baseUrl" required maxLength={2048} value={kept?.baseUrl} />
        <label for="server-client-id">OAuth client id</label>
        <input id="server-client-id" type="text" name="clientId" required maxLength={512} autocomplete="off" value={kept?.clientId} />
        <label for="server-client-secret">OAuth client secret (never shown again)</label>
        <input id="server-client-secret" type="password" name="clientSecret" required maxLength={4096} autocomplete="off" />
        <label for="server-scopes">Scopes (optional, separated by spaces)</label>
        <input id="server-scopes" type="text" name="scopes" maxLength={1024} value={kept?.scopes} />
        <label for="server-authorize-url">Authorization URL (optional: the provider's usual one under the base URL)</label>
        <input id="server-authorize-url" type="text" name="authorizeUrl" maxLength={2048} value={kept?.authorizeUrl} />
        <label for="server-token-url">Token URL (optional: the provider's usual one under the base URL)</label>
        <input id="server-token-url" type="text" name="tokenUrl" maxLength={2048} value={kept?.tokenUrl} />
        <label for="server-user-url">User API URL (optional: the provider's own; needed for a generic server to sign people in)</label>
        <input id="server-user-url" type="text" name="userUrl" maxLength={2048} value={kept?.userUrl} />
        <button type="submit">Add Git server</button>
      </CsrfForm>
    </section>
  );
}

export interface ResolvedDefaultView {
  defaultValueDefinitionId: string;
  givenId: string;
  value: unknown;
  source: { type: string; parentId?: string };
}

export const DEFAULT_SCOPES = ['ENVIRONMENT', 'PROJECT', 'ORGANIZATION'] as const;
export type DefaultScope = (typeof DEFAULT_SCOPES)[number];

/** A value set on one of the environment's scopes. */
export interface ScopedDefaultView {
  id: string;
  defaultValueDefinitionId: string;
  parentType: DefaultScope;
  value: unknown;
}

/** Which form a refusal belongs to: the new value's, or one set value's change or removal. */
export type DefaultValuesForm = { form: 'set' } | { form: 'value'; valueId: string };

export interface DefaultValuesPageProps {
  orgPath: string;
  environment: { id: string; name: string };
  values: ResolvedDefaultView[];
  /** The values set on the environment, its project and the organization, that order. */
  scoped: ScopedDefaultView[];
  /** What each scope is called on this page. */
  scopeNames: Record<DefaultScope, string>;
  canWrite: boolean;
  csrfToken: string;
  formError?: DefaultValuesForm & { message: string; details?: string[] };
  /** What the refused form held. */
  typed?: { defaultValueDefinitionId?: string; scope?: string; value?: string };
}

const SOURCE_WORDS: Record<string, string> = {
  ENVIRONMENT: 'set on this environment',
  PROJECT: "set on the environment's project",
  ORGANIZATION: 'set on the organization',
  DEFINITION: "the definition's own default",
};

export function DefaultValuesPage(props: DefaultValuesPageProps) {
  const { environment, values } = props;
  return (
    <>
      <h1>
        Default values of {environment.name} <CopyButtons id={environment.id} what="environment" />
      </h1>
      <p class="muted">
        What a module instance of this environment gets when it gives no value: the environment's, else its project's, else the organization's, else the
        definition's own.
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">Default value</th>
            <th scope="col">Value</th>
            <th scope="col">Where it comes from</th>
          </tr>
        </thead>
        <tbody>
          {values.map((v) => (
            <tr key={v.defaultValueDefinitionId}>
              <td>
                <code>{v.givenId}</code>
              </td>
              <td>
                <code>{JSON.stringify(v.value)}</code>
              </td>
              <td>{SOURCE_WORDS[v.source.type] ?? v.source.type}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {values.length === 0 && <p class="muted">No default values are defined.</p>}
      <ScopedValues {...props} />
      {props.canWrite && values.length > 0 && <SetDefaultForm {...props} />}
    </>
  );
}

/** Every value set on a scope, the ones an environment's value hides included: each can be changed or removed there. */
function ScopedValues({ orgPath, environment, values, scoped, scopeNames, canWrite, csrfToken, formError, typed }: DefaultValuesPageProps) {
  const givenIds = new Map(values.map((v) => [v.defaultValueDefinitionId, v.givenId]));
  const base = `${orgPath}/environments/${encodeURIComponent(environment.id)}/defaults`;
  const errorFor = (id: string) => (formError?.form === 'value' && formError.valueId === id ? formError : undefined);
  return (
    <section aria-labelledby="scoped-values">
      <h2 id="scoped-values">Set on each scope</h2>
      {scoped.length === 0 ? (
        <p class="muted">No value is set on this environment, its project or the organization.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Default value</th>
              <th scope="col">Set on</th>
              <th scope="col">Value</th>
              {canWrite && <ActionsHeader />}
            </tr>
          </thead>
          <tbody>
            {scoped.map((v) => {
              const name = givenIds.get(v.defaultValueDefinitionId) ?? v.defaultValueDefinitionId;
              const where = scopeNames[v.parentType];
              const error = errorFor(v.id);
              return (
                <tr key={v.id}>
                  <td>
                    <code>{name}</code>
                  </td>
                  <td>{where}</td>
                  <td>
                    {canWrite ? (
                      <CsrfForm action={`${base}/${encodeURIComponent(v.id)}`} csrfToken={csrfToken}>
                        <FormError error={error} />
                        <label for={`value-${v.id}`} class="skip-link">
                          Value of {name} on {where}, as JSON
                        </label>
                        <input
                          id={`value-${v.id}`}
                          type="text"
                          name="value"
                          class="mono"
                          required
                          maxLength={64 * 1024}
                          value={error && typed?.value !== undefined ? typed.value : JSON.stringify(v.value)}
                        />
                        <button type="submit" class="secondary">
                          Change
                        </button>
                      </CsrfForm>
                    ) : (
                      <code>{JSON.stringify(v.value)}</code>
                    )}
                  </td>
                  {canWrite && (
                    <td>
                      <CsrfForm action={`${base}/${encodeURIComponent(v.id)}/remove`} csrfToken={csrfToken}>
                        <button type="submit" class="danger">
                          Remove {name} from {where}
                        </button>
                      </CsrfForm>
                    </td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Sets one definition's value on a scope: a new value, or a new one in place of what that scope held. */
function SetDefaultForm({ orgPath, environment, values, scopeNames, csrfToken, formError, typed }: DefaultValuesPageProps) {
  const kept = formError?.form === 'set' ? typed : undefined;
  return (
    <section aria-labelledby="set-default" class="panel-form">
      <h2 id="set-default">Set a default value</h2>
      <p class="muted">A scope that already holds a value for it gets the new one in its place.</p>
      <CsrfForm action={`${orgPath}/environments/${encodeURIComponent(environment.id)}/defaults`} csrfToken={csrfToken}>
        <FormError error={formError?.form === 'set' ? formError : undefined} />
        <label for="default-definition">Default value</label>
        <select id="default-definition" name="defaultValueDefinitionId" required>
          {values.map((v) => (
            <option
              key={v.defaultValueDefinitionId}
              value={v.defaultValueDefinitionId}
              selected={kept?.defaultValueDefinitionId === v.defaultValueDefinitionId}
            >
              {v.givenId}
            </option>
          ))}
        </select>
        <label for="default-scope">Set on</label>
        <select id="default-scope" name="scope">
          {DEFAULT_SCOPES.map((scope) => (
            <option key={scope} value={scope} selected={kept?.scope === scope}>
              {scopeNames[scope]}
            </option>
          ))}
        </select>
        <label for="default-value">Value, as JSON (a text in quotes: "eu-west-1")</label>
        <textarea id="default-value" name="value" rows={3} class="mono" required>
          {kept?.value ?? ''}
        </textarea>
        <button type="submit">Set value</button>
      </CsrfForm>
    </section>
  );
}
