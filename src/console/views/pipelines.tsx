// Pipelines: the list, and a pipeline's page where a new version's config is written, its changes
// against the latest version previewed (the API's dry run), then saved.

import { When } from './format.tsx';
import { CopyButtons, CsrfForm } from './layout.tsx';
import { FormError } from './stacks.tsx';

export interface PipelineView {
  id: string;
  name: string;
  latestVersion: number;
  latestVersionId: string;
  description?: string;
  updatedAt: string;
}

export interface PatchView {
  path: string;
  pathLabel?: string;
  fromValue?: unknown;
  value?: unknown;
}

export function PipelinesPage({ orgPath, pipelines, nextCursor }: { orgPath: string; pipelines: PipelineView[]; nextCursor?: string }) {
  return (
    <>
      <h1>Pipelines</h1>
      <table>
        <thead>
          <tr>
            <th scope="col">Pipeline</th>
            <th scope="col">Latest version</th>
            <th scope="col">Changed</th>
          </tr>
        </thead>
        <tbody>
          {pipelines.map((p) => (
            <tr key={p.id}>
              <td>
                <a href={`${orgPath}/pipelines/${encodeURIComponent(p.id)}`}>{p.name}</a>
                {p.description && <div class="muted">{p.description}</div>}
              </td>
              <td>{p.latestVersion}</td>
              <td>
                <When at={p.updatedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {pipelines.length === 0 && <p class="muted">No pipelines.</p>}
      {nextCursor && (
        <p class="pager">
          <a href={`${orgPath}/pipelines?cursor=${encodeURIComponent(nextCursor)}`}>Next page</a>
        </p>
      )}
    </>
  );
}

export interface PipelinePageProps {
  orgPath: string;
  pipeline: PipelineView;
  versions: { id: string; version: number; createdAt: string }[];
  /** The text in the editor: the latest version's config, or what the reader wrote. */
  configText: string;
  canWrite: boolean;
  csrfToken: string;
  /** The changes the text makes to the latest version, once previewed. */
  preview?: { baseVersion: number; patch: PatchView[] };
  formError?: { message: string; details?: string[] };
}

const shown = (value: unknown) => (value === undefined ? '—' : JSON.stringify(value));

export function PipelinePage({ orgPath, pipeline, versions, configText, canWrite, csrfToken, preview, formError }: PipelinePageProps) {
  const action = `${orgPath}/pipelines/${encodeURIComponent(pipeline.id)}/versions`;
  return (
    <>
      <h1>
        {pipeline.name} <CopyButtons id={pipeline.id} what="pipeline" />
      </h1>
      <p class="muted">
        Version {pipeline.latestVersion} · changed <When at={pipeline.updatedAt} />
      </p>
      {preview && (
        <section aria-labelledby="preview" class="panel-form">
          <h2 id="preview">Changes against version {preview.baseVersion}</h2>
          {preview.patch.length === 0 ? (
            <p>None: this is the latest version as it is.</p>
          ) : (
            <table class="attributes">
              <thead>
                <tr>
                  <th scope="col">Where</th>
                  <th scope="col">Before</th>
                  <th scope="col">After</th>
                </tr>
              </thead>
              <tbody>
                {preview.patch.map((op) => (
                  <tr key={op.path}>
                    <td>{op.pathLabel ?? <code>{op.path}</code>}</td>
                    <td>
                      <code>{shown(op.fromValue)}</code>
                    </td>
                    <td>
                      <code>{shown(op.value)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      )}
      {canWrite ? (
        <CsrfForm action={action} csrfToken={csrfToken}>
          <FormError error={formError} />
          <label for="pipeline-config">The config of a new version, as JSON (docs/pipelines.md)</label>
          <textarea id="pipeline-config" name="config" rows={18} class="mono">
            {configText}
          </textarea>
          <span class="actions">
            <button type="submit" name="intent" value="preview" class={preview ? 'secondary' : undefined}>
              Preview changes
            </button>
            {preview && preview.patch.length > 0 && (
              <button type="submit" name="intent" value="save">
                Save version {pipeline.latestVersion + 1}
              </button>
            )}
          </span>
        </CsrfForm>
      ) : (
        <pre class="mono">{configText}</pre>
      )}
      <h2>Versions</h2>
      <ul class="plain-list">
        {[...versions].reverse().map((v) => (
          <li key={v.id}>
            Version {v.version} · <When at={v.createdAt} />
          </li>
        ))}
      </ul>
    </>
  );
}
