// Where code comes from (code sources and self-hosted Git servers) and the default values an
// environment resolves, each with where it comes from.

import { When } from './format.tsx';
import { CsrfForm } from './layout.tsx';
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

export interface CodeSourcesPageProps {
  orgPath: string;
  sources: CodeSourceView[];
  servers: GitServerView[];
  canManage: boolean;
  csrfToken: string;
  formError?: { message: string; details?: string[] };
}

export function CodeSourcesPage({ orgPath, sources, servers, canManage, csrfToken, formError }: CodeSourcesPageProps) {
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
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

export interface ResolvedDefaultView {
  defaultValueDefinitionId: string;
  givenId: string;
  value: unknown;
  source: { type: string; parentId?: string };
}

const SOURCE_WORDS: Record<string, string> = {
  ENVIRONMENT: 'set on this environment',
  PROJECT: "set on the environment's project",
  ORGANIZATION: 'set on the organization',
  DEFINITION: "the definition's own default",
};

export function DefaultValuesPage({ environment, values }: { environment: { name: string }; values: ResolvedDefaultView[] }) {
  return (
    <>
      <h1>Default values of {environment.name}</h1>
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
    </>
  );
}
