// Who may act in the organization: members, service accounts and API keys, with the forms that change
// them for ADMIN and above, and a new key's token shown once. And the audit log, for ADMIN and above.

import { ROLES } from '../../platform/auth/roles.ts';
import { AUDIT_OUTCOMES } from '../../platform/db/enums.ts';
import { ShortId, When, withQuery } from './format.tsx';
import { CopyButton, CsrfForm, ActionsHeader } from './layout.tsx';
import { FormError } from './stacks.tsx';

export interface MemberView {
  id: string;
  email: string;
  role: string;
  fullName?: string;
  userId?: string;
  invitationId?: string;
}

export interface ServiceAccountView {
  id: string;
  name: string;
  role: string;
  createdAt: string;
}

export interface ApiKeyView {
  id: string;
  name: string;
  tokenPrefix: string;
  userId?: string;
  serviceAccountId?: string;
  createdAt: string;
  expiresAt?: string;
  revokedAt?: string;
  organizationOnly?: boolean;
}

export type AccessForm = 'member' | 'service-account' | 'key';

export interface AccessPageProps {
  orgPath: string;
  members: MemberView[];
  serviceAccounts: ServiceAccountView[];
  keys: ApiKeyView[];
  viewerId: string;
  /** ADMIN and above: invite, change roles, remove; service accounts. */
  canManage: boolean;
  /** OWNER: may grant OWNER and touch an OWNER's membership or service account (the API's rule). */
  isOwner: boolean;
  /** A super-administrator may revoke any user's key. */
  isSuperAdmin: boolean;
  /** The session acts with a key bound to this organization (a Git sign-in's). */
  boundToOrganization?: boolean;
  csrfToken: string;
  formError?: { form: AccessForm; message: string; details?: string[] };
  /** A key just created: its token, shown on this page only. */
  created?: { name: string; token: string };
}

function RoleSelect({ id, selected, roles }: { id: string; selected?: string; roles: readonly string[] }) {
  return (
    <select id={id} name="role">
      {roles.map((r) => (
        <option key={r} value={r} selected={r === selected}>
          {r.toLowerCase()}
        </option>
      ))}
    </select>
  );
}

/** A new key's token, on the one page that shows it. */
export function TokenOnce({ created }: { created: { name: string; token: string } }) {
  return (
    <div class="token-once" role="alert">
      <p>
        The token of the key <strong>{created.name}</strong>. It is shown this once: copy it now.
      </p>
      <p>
        <code class="token">{created.token}</code> <CopyButton text={created.token} label="Copy token" />
      </p>
    </div>
  );
}

export function AccessPage(props: AccessPageProps) {
  const { orgPath, members, serviceAccounts, keys, canManage, isOwner, csrfToken, created } = props;
  // Only an OWNER grants OWNER or touches an OWNER's membership or service account: no form the API would refuse.
  const mayTouch = (role: string) => canManage && (role !== 'OWNER' || isOwner);
  const grantable = ROLES.filter((r) => r !== 'OWNER' || isOwner);
  const accountRoles = new Map(serviceAccounts.map((a) => [a.id, a.role]));
  // A session that acts with a key bound to its organization revokes only keys bound like it (the API's rule).
  const mayRevoke = (k: ApiKeyView) =>
    k.userId === props.viewerId
      ? !props.boundToOrganization || k.organizationOnly
      : k.serviceAccountId
        ? mayTouch(accountRoles.get(k.serviceAccountId) ?? 'OWNER')
        : props.isSuperAdmin;
  const errorFor = (form: AccessForm) => (props.formError?.form === form ? props.formError : undefined);
  const accountNames = new Map(serviceAccounts.map((a) => [a.id, a.name]));
  const memberNames = new Map(members.filter((m) => m.userId).map((m) => [m.userId!, m.email]));
  return (
    <>
      <h1>Access</h1>
      {created && <TokenOnce created={created} />}
      <h2>Members</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Role</th>
            {canManage && <ActionsHeader />}
          </tr>
        </thead>
        <tbody>
          {members.map((m) => (
            <tr key={m.id}>
              <td>
                {m.fullName ? `${m.fullName} · ` : ''}
                {m.email}
                {m.invitationId && <span class="muted"> · invited</span>}
              </td>
              <td>{m.role.toLowerCase()}</td>
              {canManage && (
                <td>
                  {mayTouch(m.role) && (
                    <span class="actions">
                      <CsrfForm action={`${orgPath}/access/members/${encodeURIComponent(m.id)}/role`} csrfToken={csrfToken}>
                        <label for={`role-${m.id}`} class="skip-link">
                          Role of {m.email}
                        </label>
                        <RoleSelect id={`role-${m.id}`} selected={m.role} roles={grantable} />
                        <button type="submit" class="secondary">
                          Change role
                        </button>
                      </CsrfForm>
                      <CsrfForm action={`${orgPath}/access/members/${encodeURIComponent(m.id)}/remove`} csrfToken={csrfToken}>
                        <button type="submit" class="danger">
                          Remove {m.email}
                        </button>
                      </CsrfForm>
                    </span>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {canManage && (
        <section aria-labelledby="invite" class="panel-form">
          <h3 id="invite">Invite a member</h3>
          <CsrfForm action={`${orgPath}/access/members`} csrfToken={csrfToken}>
            <FormError error={errorFor('member')} />
            <label for="invite-email">Email</label>
            <input id="invite-email" type="text" name="email" required maxLength={254} autocomplete="off" />
            <label for="invite-role">Role</label>
            <RoleSelect id="invite-role" selected="MEMBER" roles={grantable} />
            <button type="submit">Invite</button>
          </CsrfForm>
        </section>
      )}

      <h2>Service accounts</h2>
      {serviceAccounts.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Service account</th>
              <th scope="col">Role</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {serviceAccounts.map((a) => (
              <tr key={a.id}>
                <td>{a.name}</td>
                <td>{a.role.toLowerCase()}</td>
                <td>
                  <When at={a.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canManage && (
        <section aria-labelledby="new-account" class="panel-form">
          <h3 id="new-account">New service account</h3>
          <CsrfForm action={`${orgPath}/access/service-accounts`} csrfToken={csrfToken}>
            <FormError error={errorFor('service-account')} />
            <label for="account-name">Name</label>
            <input id="account-name" type="text" name="name" required maxLength={255} />
            <label for="account-role">Role</label>
            <RoleSelect id="account-role" selected="MEMBER" roles={grantable} />
            <button type="submit">Create service account</button>
          </CsrfForm>
        </section>
      )}

      <h2>API keys</h2>
      <p class="muted">{canManage ? "Every key of the organization's people and service accounts." : 'Your own keys.'}</p>
      <table>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Of</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <ActionsHeader />
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <tr key={k.id}>
              <td>
                {k.name} <code class="muted">{k.tokenPrefix}…</code>
              </td>
              <td>
                {k.serviceAccountId
                  ? `service account ${accountNames.get(k.serviceAccountId) ?? k.serviceAccountId}`
                  : k.userId === props.viewerId
                    ? 'you'
                    : (memberNames.get(k.userId ?? '') ?? <ShortId id={k.userId ?? ''} />)}
              </td>
              <td>
                <When at={k.createdAt} />
              </td>
              <td>{k.revokedAt ? <span class="muted">revoked</span> : <When at={k.expiresAt} />}</td>
              <td>
                {!k.revokedAt && mayRevoke(k) && (
                  <CsrfForm action={`${orgPath}/access/keys/${encodeURIComponent(k.id)}/revoke`} csrfToken={csrfToken}>
                    <button type="submit" class="danger">
                      Revoke {k.name}
                    </button>
                  </CsrfForm>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <section aria-labelledby="new-key" class="panel-form">
        <h3 id="new-key">New API key</h3>
        <CsrfForm action={`${orgPath}/access/keys`} csrfToken={csrfToken}>
          <FormError error={errorFor('key')} />
          <label for="key-name">Name</label>
          <input id="key-name" type="text" name="name" required maxLength={255} />
          <label for="key-owner">For</label>
          <select id="key-owner" name="serviceAccountId">
            <option value="">Me</option>
            {serviceAccounts
              .filter((a) => mayTouch(a.role))
              .map((a) => (
                <option key={a.id} value={a.id}>
                  Service account {a.name}
                </option>
              ))}
          </select>
          <label for="key-expires">Expires (optional, a date and time in UTC, e.g. 2027-01-31T00:00:00Z)</label>
          <input id="key-expires" type="text" name="expiresAt" maxLength={40} />
          <button type="submit">Create key</button>
        </CsrfForm>
      </section>
    </>
  );
}

export interface AuditEventView {
  id: string;
  seq: number;
  createdAt: string;
  actorType: string;
  actorId: string;
  action: string;
  resourceType: string;
  resourceId: string | null;
  outcome: string;
  errorCode: string | null;
}

export interface AuditPageProps {
  orgPath: string;
  events: AuditEventView[];
  filter: { action?: string; outcome?: string };
  nextCursor?: string;
}

export function AuditPage({ orgPath, events, filter, nextCursor }: AuditPageProps) {
  return (
    <>
      <h1>Audit log</h1>
      <form method="get" action={`${orgPath}/audit`} class="filter-form">
        <div>
          <label for="audit-action">Action (e.g. run.approve)</label>
          <input id="audit-action" type="text" name="action" value={filter.action ?? ''} maxLength={200} />
        </div>
        <div>
          <label for="audit-outcome">Outcome</label>
          <select id="audit-outcome" name="outcome">
            <option value="">Any</option>
            {AUDIT_OUTCOMES.map((o) => (
              <option key={o} value={o} selected={filter.outcome === o}>
                {o.toLowerCase()}
              </option>
            ))}
          </select>
        </div>
        <button type="submit">Filter</button>
      </form>
      <table>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">Action</th>
            <th scope="col">On</th>
            <th scope="col">Outcome</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <tr key={e.id}>
              <td>
                <When at={e.createdAt} />
              </td>
              <td>
                <span class="muted">{e.actorType.toLowerCase().replaceAll('_', ' ')}</span> <ShortId id={e.actorId} />
              </td>
              <td>
                <code>{e.action}</code>
              </td>
              <td>
                {e.resourceType} {e.resourceId && <ShortId id={e.resourceId} />}
              </td>
              <td>
                {e.outcome.toLowerCase()}
                {e.errorCode && <span class="muted"> · {e.errorCode}</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {events.length === 0 && <p class="muted">Nothing matches.</p>}
      {nextCursor && (
        <p class="pager">
          <a href={withQuery(`${orgPath}/audit`, { ...filter, cursor: nextCursor })}>Older events →</a>
        </p>
      )}
    </>
  );
}
