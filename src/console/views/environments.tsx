// Projects and their environments, with forms for new ones, and to rename or delete each: where stacks
// live.

import { ConfirmDelete } from './confirm.tsx';
import { CsrfForm } from './layout.tsx';
import { FormError } from './stacks.tsx';

export interface NamedRecordView {
  id: string;
  name: string;
  givenId: string;
}

/** Which form a refusal belongs to: a new project's or environment's, or one record's rename or delete. */
export type EnvironmentsForm = { form: 'project' | 'environment' } | { form: 'rename' | 'delete'; recordId: string };

export interface EnvironmentsPageProps {
  orgPath: string;
  projects: NamedRecordView[];
  environments: (NamedRecordView & { projectId: string })[];
  canWriteProjects: boolean;
  canWriteEnvironments: boolean;
  csrfToken: string;
  formError?: EnvironmentsForm & { message: string; details?: string[] };
  /** What a refused rename or delete held. */
  typed?: { name?: string; confirm?: string };
}

export function EnvironmentsPage(props: EnvironmentsPageProps) {
  const { orgPath, projects, environments, canWriteProjects, canWriteEnvironments, csrfToken, formError } = props;
  const errorFor = (form: 'project' | 'environment') => (formError?.form === form ? formError : undefined);
  return (
    <>
      <h1>Projects and environments</h1>
      {projects.length === 0 && <p class="muted">No projects yet.</p>}
      {projects.map((project) => {
        const envs = environments.filter((e) => e.projectId === project.id);
        return (
          <section key={project.id} aria-labelledby={`project-${project.id}`}>
            <h2 id={`project-${project.id}`}>
              {project.name} <code class="muted">{project.givenId}</code>
            </h2>
            {envs.length ? (
              <ul>
                {envs.map((e) => (
                  <li key={e.id}>
                    <a href={`${orgPath}/stacks?environmentId=${encodeURIComponent(e.id)}`}>{e.name}</a> <code class="muted">{e.givenId}</code> ·{' '}
                    <a href={`${orgPath}/environments/${encodeURIComponent(e.id)}/modules`}>modules</a> ·{' '}
                    <a href={`${orgPath}/environments/${encodeURIComponent(e.id)}/defaults`}>default values</a>
                    {canWriteEnvironments && <ManageRecord {...props} kind="environment" record={e} />}
                  </li>
                ))}
              </ul>
            ) : (
              <p class="muted">No environments.</p>
            )}
            {canWriteProjects && <ManageRecord {...props} kind="project" record={project} />}
          </section>
        );
      })}
      {canWriteProjects && (
        <section aria-labelledby="new-project" class="panel-form">
          <h2 id="new-project">New project</h2>
          <CsrfForm action={`${orgPath}/projects`} csrfToken={csrfToken}>
            <FormError error={errorFor('project')} />
            <label for="project-name">Name</label>
            <input id="project-name" type="text" name="name" required maxLength={255} />
            <label for="project-given-id">Id (letters, digits and dashes; names it in URLs and state)</label>
            <input id="project-given-id" type="text" name="givenId" required maxLength={60} />
            <button type="submit">Create project</button>
          </CsrfForm>
        </section>
      )}
      {canWriteEnvironments && projects.length > 0 && (
        <section aria-labelledby="new-environment" class="panel-form">
          <h2 id="new-environment">New environment</h2>
          <CsrfForm action={`${orgPath}/environments`} csrfToken={csrfToken}>
            <FormError error={errorFor('environment')} />
            <label for="environment-project">Project</label>
            <select id="environment-project" name="projectId" required>
              {projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
            <label for="environment-name">Name</label>
            <input id="environment-name" type="text" name="name" required maxLength={255} />
            <label for="environment-given-id">Id (letters, digits and dashes)</label>
            <input id="environment-given-id" type="text" name="givenId" required maxLength={60} />
            <button type="submit">Create environment</button>
          </CsrfForm>
        </section>
      )}
    </>
  );
}

/** Renaming and deleting one project or environment, folded until opened, or until the API refused one of them. */
function ManageRecord({
  orgPath,
  csrfToken,
  formError,
  typed,
  kind,
  record,
}: EnvironmentsPageProps & { kind: 'project' | 'environment'; record: NamedRecordView }) {
  const refused = formError && 'recordId' in formError && formError.recordId === record.id ? formError : undefined;
  const path = `${orgPath}/${kind === 'project' ? 'projects' : 'environments'}/${encodeURIComponent(record.id)}`;
  const what = `the ${kind} ${record.name}`;
  return (
    <details class="manage" open={refused !== undefined}>
      <summary>Rename or delete {record.name}</summary>
      <CsrfForm action={`${path}/rename`} csrfToken={csrfToken}>
        <FormError error={refused?.form === 'rename' ? refused : undefined} />
        <label for={`rename-${record.id}`}>New name of {what}</label>
        <input
          id={`rename-${record.id}`}
          type="text"
          name="name"
          required
          maxLength={255}
          value={refused?.form === 'rename' ? (typed?.name ?? '') : record.name}
        />
        <button type="submit" class="secondary">
          Rename
        </button>
      </CsrfForm>
      <ConfirmDelete
        action={`${path}/delete`}
        csrfToken={csrfToken}
        id={`delete-${record.id}`}
        what={what}
        expected={record.givenId}
        error={refused?.form === 'delete' ? refused : undefined}
        typed={refused?.form === 'delete' ? typed?.confirm : undefined}
      />
    </details>
  );
}
