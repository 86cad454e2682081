-- Signing in to the web console through a self-hosted Git server. A user links their account on the
-- server (an OAuth login whose answer names them: the server's user API) to their Plinth user; after
-- that, the same login signs them in. The link is per server, so a server's users can only ever sign
-- in as the Plinth users who linked themselves to that server.
alter table git_self_hosted_servers add column user_url text;

create table git_identities (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  git_server_id text not null references git_self_hosted_servers (id) on delete cascade,
  -- The server's own, stable id of the account (GitHub's and GitLab's numeric id, Bitbucket's uuid, OIDC's sub).
  subject text not null,
  -- The account's name on the server, as it was at the last link: for people to read, never to match.
  login text not null,
  created_at timestamptz not null default now(),
  unique (git_server_id, subject),
  unique (user_id, git_server_id)
);

-- A console session opened by a Git sign-in acts with a key minted for it: signing out revokes it.
alter table console_sessions add column minted_key boolean not null default false;
-- Whether principal_id is a user or a service account, for the audit entries of signing in and out.
alter table console_sessions add column principal_type text not null default 'MEMBERSHIP' check (principal_type in ('MEMBERSHIP', 'SERVICE_ACCOUNT'));

-- A key that acts only in its own organization, whatever X-Organization-Id asks, and with its user's
-- membership there only (no super-administrator's powers): what a Git sign-in mints. A Git server is
-- one organization's, and an ADMIN of it controls what the server says; its logins must not reach
-- the user's other organizations.
alter table api_keys add column organization_only boolean not null default false;
