export function SignIn({ signInToken, error }: { signInToken: string; error?: string }) {
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
