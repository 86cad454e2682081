-- Sign-ins to the web console. The browser holds a random session token in an HttpOnly cookie; only its
-- sha256 is stored. A session acts with the API key it was opened with (sealed with the platform's
-- secret key, opened per request), so it has exactly that key's roles and ends when the key is revoked
-- or deleted.
create table console_sessions (
  token_hash text primary key,
  api_key_id text not null references api_keys (id) on delete cascade,
  -- The user (or service account) the key belongs to: "sign out everywhere" ends all of theirs.
  principal_id text not null,
  sealed_key text not null,
  -- The organization the key acted in at sign-in, where the console opens.
  organization_id text not null references organizations (id) on delete cascade,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index console_sessions_principal_idx on console_sessions (principal_id, created_at);
create index console_sessions_expiry_idx on console_sessions (expires_at);
