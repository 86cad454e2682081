import type { ComponentChildren } from 'preact';

/** A Git server this browser signed in through before: offered again as a button. */
export interface GitSignInChoice {
  id: string;
  name: string;
  provider: string;
}

export function SignIn({ signInToken, error, gitServers = [] }: { signInToken: string; error?: string; gitServers?: GitSignInChoice[] }) {
  return (
    <div class="card">
      <h1>Sign in to Plinth</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <form method="post" action="/sign-in">
        <input type="hidden" name="_signin" value={signInToken} />
        <label for="api-key">API key</label>
        <input id="api-key" name="apiKey" type="password" autocomplete="off" required maxLength={512} aria-describedby="api-key-help" />
        <p id="api-key-help" class="muted">
          A key of yours (plk_…), such as the admin token <code>npm start</code> wrote. It stays on the server; the browser keeps only a session cookie.
        </p>
        <button type="submit">Sign in</button>
      </form>
      <h2>Or through a Git server</h2>
      {gitServers.length > 0 && (
        <ul class="plain">
          {gitServers.map((server) => (
            <li key={server.id}>
              <GitSignInForm serverId={server.id} signInToken={signInToken}>
                Sign in through {server.name} <span class="muted">({server.provider.toLowerCase()})</span>
              </GitSignInForm>
            </li>
          ))}
        </ul>
      )}
      <p class="muted">
        Once you have linked your account on your organization's Git server (on your account page, signed in), its sign-in link signs you in; this browser then
        offers it here.
      </p>
    </div>
  );
}

/** The button that starts a sign-in through a Git server: a POST with the sign-in form's token, so only this site starts one. */
function GitSignInForm({ serverId, signInToken, children }: { serverId: string; signInToken: string; children: ComponentChildren }) {
  return (
    <form method="post" action={`/sign-in/git/${serverId}`} class="inline">
      <input type="hidden" name="_signin" value={signInToken} />
      <button type="submit">{children}</button>
    </form>
  );
}

/** A server's sign-in link: where its login is, before the browser goes there. */
export function GitSignInPage({ server, signInToken }: { server: { id: string; name: string; provider: string; loginHost: string }; signInToken: string }) {
  return (
    <div class="card">
      <h1>Sign in through {server.name}</h1>
      <p>
        You will log in on <code>{server.loginHost}</code> ({server.provider.toLowerCase()}), then come back signed in to Plinth as the user who linked that
        account, in the organization the server belongs to.
      </p>
      <GitSignInForm serverId={server.id} signInToken={signInToken}>
        Continue to {server.loginHost}
      </GitSignInForm>
      <p class="muted">
        <a href="/sign-in">Sign in with an API key instead</a>
      </p>
    </div>
  );
}

export function ErrorMessage({ status, message, code }: { status: number; message: string; code?: string }) {
  return (
    <>
      <h1>{status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : 'Something went wrong'}</h1>
      <p class="error" role="alert">
        {message}
      </p>
      {code && (
        <p class="muted">
          Error code <code>{code}</code>
        </p>
      )}
    </>
  );
}
