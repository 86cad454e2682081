// The reader's own account: the Git server accounts that sign them in, and the servers of this
// organization they can link one on.

import { When } from './format.tsx';
import { CopyButton, CsrfForm } from './layout.tsx';

export interface GitIdentityView {
  id: string;
  gitSelfHostedServerId: string;
  serverName: string;
  provider: string;
  organizationId: string;
  login: string;
  createdAt: string;
}

export interface LinkableServerView {
  id: string;
  name: string;
  provider: string;
  userUrl: string | null;
  signInUrl: string;
}

export interface AccountPageProps {
  orgPath: string;
  organizationId: string;
  isUser: boolean;
  identities: GitIdentityView[];
  servers: LinkableServerView[];
  csrfToken: string;
}

export function AccountPage({ orgPath, organizationId, isUser, identities, servers, csrfToken }: AccountPageProps) {
  if (!isUser) {
    return (
      <>
        <h1>Your account</h1>
        <p class="muted">You are signed in with a service account's key: a service account has no Git account to sign in with.</p>
      </>
    );
  }
  const linked = new Set(identities.map((i) => i.gitSelfHostedServerId));
  return (
    <>
      <h1>Your account</h1>
      <h2>Git sign-ins</h2>
      <p class="muted">Each account below signs you in to the console through its Git server's login, in the organization the server belongs to.</p>
      {identities.length === 0 ? (
        <p class="muted">None yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Git server</th>
              <th scope="col">Your account there</th>
              <th scope="col">Linked</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {identities.map((identity) => (
              <tr key={identity.id}>
                <td>
                  {identity.serverName} <span class="muted">{identity.provider.toLowerCase()}</span>
                  {identity.organizationId !== organizationId && <span class="muted"> · another organization</span>}
                </td>
                <td>{identity.login}</td>
                <td>
                  <When at={identity.createdAt} />
                </td>
                <td>
                  <CsrfForm action={`${orgPath}/account/identities/${identity.id}/unlink`} csrfToken={csrfToken}>
                    <button type="submit" class="secondary" aria-label={`Unlink ${identity.login} on ${identity.serverName}`}>
                      Unlink
                    </button>
                  </CsrfForm>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Link an account</h2>
      {servers.length === 0 ? (
        <p class="muted">This organization has no self-hosted Git server.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Git server</th>
              <th scope="col">Sign-in link</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {servers.map((server) => (
              <tr key={server.id}>
                <td>
                  {server.name} <span class="muted">{server.provider.toLowerCase()}</span>
                </td>
                <td>
                  <code>{server.signInUrl}</code> <CopyButton text={server.signInUrl} label="Copy" ariaLabel={`Copy the sign-in link of ${server.name}`} />
                </td>
                <td>
                  {server.userUrl === null ? (
                    <span class="muted">Plinth does not know this server's user API: an ADMIN must register its user URL</span>
                  ) : (
                    <CsrfForm action={`${orgPath}/account/link/${server.id}`} csrfToken={csrfToken}>
                      <button type="submit">{linked.has(server.id) ? 'Link again' : 'Link my account'}</button>
                    </CsrfForm>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** The page at the end of a Git server's redirects: it sends the browser on (see PageProps.refreshTo), with a link if it does not. */
export function ContinuePage({ to, message }: { to: string; message: string }) {
  return (
    <div class="card">
      <h1>{message}</h1>
      <p>
        <a href={to}>Continue</a>
      </p>
    </div>
  );
}
