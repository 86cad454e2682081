// The reader's organizations (each a link into it), a new one, and this one's name and billing email
// for its OWNERs.

import { CsrfForm } from './layout.tsx';
import { FormError } from './stacks.tsx';

export interface OrganizationView {
  id: string;
  name: string;
  billingEmail: string;
}

export interface OrganizationsPageProps {
  orgPath: string;
  current: OrganizationView;
  organizations: OrganizationView[];
  /** OWNER of the current one: may rename it. */
  canEdit: boolean;
  /** A user (not a service account) may create an organization. */
  canCreate: boolean;
  csrfToken: string;
  formError?: { form: 'edit' | 'create'; message: string; details?: string[] };
}

export function OrganizationsPage({ orgPath, current, organizations, canEdit, canCreate, csrfToken, formError }: OrganizationsPageProps) {
  const errorFor = (form: 'edit' | 'create') => (formError?.form === form ? formError : undefined);
  return (
    <>
      <h1>Organizations</h1>
      <ul>
        {organizations.map((o) => (
          <li key={o.id}>
            {o.id === current.id ? <strong aria-current="page">{o.name} (this one)</strong> : <a href={`/orgs/${encodeURIComponent(o.id)}/runs`}>{o.name}</a>}
          </li>
        ))}
      </ul>
      {canEdit && (
        <section aria-labelledby="edit-org" class="panel-form">
          <h2 id="edit-org">This organization</h2>
          <CsrfForm action={`${orgPath}/organization`} csrfToken={csrfToken}>
            <FormError error={errorFor('edit')} />
            <label for="org-name">Name</label>
            <input id="org-name" type="text" name="name" required maxLength={255} value={current.name} />
            <label for="org-billing">Billing email</label>
            <input id="org-billing" type="text" name="billingEmail" required maxLength={254} value={current.billingEmail} />
            <button type="submit">Save</button>
          </CsrfForm>
        </section>
      )}
      {canCreate && (
        <section aria-labelledby="new-org" class="panel-form">
          <h2 id="new-org">New organization</h2>
          <p class="muted">You become its OWNER.</p>
          <CsrfForm action={`${orgPath}/organizations`} csrfToken={csrfToken}>
            <FormError error={errorFor('create')} />
            <label for="new-org-name">Name</label>
            <input id="new-org-name" type="text" name="name" required maxLength={255} />
            <label for="new-org-billing">Billing email</label>
            <input id="new-org-billing" type="text" name="billingEmail" required maxLength={254} />
            <button type="submit">Create organization</button>
          </CsrfForm>
        </section>
      )}
    </>
  );
}
