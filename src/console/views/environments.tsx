// Projects and their environments, with forms for new ones: where stacks live.

import { CsrfForm } from './layout.tsx';
import { FormError } from './stacks.tsx';

export interface EnvironmentsPageProps {
  orgPath: string;
  projects: { id: string; name: string; givenId: string }[];
  environments: { id: string; name: string; givenId: string; projectId: string }[];
  canWrite: boolean;
  csrfToken: string;
  formError?: { form: 'project' | 'environment'; message: string; details?: string[] };
}

export function EnvironmentsPage({ orgPath, projects, environments, canWrite, csrfToken, formError }: EnvironmentsPageProps) {
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
                  </li>
                ))}
              </ul>
            ) : (
              <p class="muted">No environments.</p>
            )}
          </section>
        );
      })}
      {canWrite && (
        <>
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
          {projects.length > 0 && (
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
      )}
    </>
  );
}
