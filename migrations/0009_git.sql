-- Git: code sources, self-hosted Git servers and their OAuth connections, Git app installations,
-- single-use OAuth/app-install states, push-webhook deliveries, and the commit a run checked out.
-- Every secret column holds a value sealed by the SecretBox (docs/secrets.md), never plaintext.
create table git_self_hosted_servers (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  name text not null,
  provider text not null check (provider in ('GITHUB', 'GITLAB', 'BITBUCKET', 'GITEA', 'GENERIC')),
  base_url text not null,
  -- OAuth endpoints; null: derived from base_url and provider (docs/git.md).
  authorize_url text,
  token_url text,
  client_id text not null,
  client_secret_sealed text not null,
  scopes text not null default '',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index git_self_hosted_servers_org_idx on git_self_hosted_servers (organization_id, id);

-- The OAuth tokens an organization holds for a self-hosted server (one connection per server).
create table git_oauth_connections (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  server_id text not null references git_self_hosted_servers (id) on delete cascade,
  connected_by_id text,
  access_token_sealed text not null,
  refresh_token_sealed text,
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, server_id)
);

create table git_app_installations (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  -- One organization per installation: an installation id named by a second organization's return leg
  -- is refused, so no organization fetches with another's installation (docs/git.md).
  installation_id text not null unique,
  installed_by_id text,
  created_at timestamptz not null default now()
);

-- A state handed to an OAuth server or an app-install page: its nonce is used at most once.
create table git_flow_states (
  nonce text primary key,
  kind text not null check (kind in ('OAUTH', 'APP_INSTALL')),
  organization_id text not null references organizations (id) on delete cascade,
  -- PKCE: the verifier never leaves the service (the state does).
  code_verifier_sealed text,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index git_flow_states_expiry_idx on git_flow_states (expires_at);

create table code_sources (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  given_id text,
  name text not null,
  url text not null,
  provider text not null check (provider in ('GITHUB', 'GITLAB', 'BITBUCKET', 'GITEA', 'GENERIC')),
  auth_type text not null check (auth_type in ('NONE', 'TOKEN', 'APP_INSTALLATION', 'OAUTH')),
  token_sealed text,
  git_app_installation_id text references git_app_installations (id),
  git_self_hosted_server_id text references git_self_hosted_servers (id),
  webhook_secret_sealed text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, given_id)
);
create index code_sources_org_idx on code_sources (organization_id, id);

-- Push deliveries already handled: a redelivery (same id) triggers nothing again.
create table git_webhook_deliveries (
  code_source_id text not null references code_sources (id) on delete cascade,
  delivery_id text not null,
  provider text not null check (provider in ('GITHUB', 'GITLAB', 'BITBUCKET', 'GITEA', 'GENERIC')),
  commit_sha text,
  run_ids jsonb not null default '[]',
  received_at timestamptz not null default now(),
  primary key (code_source_id, delivery_id)
);

-- The optional poller (PLINTH_GIT_POLL_INTERVAL_S): the last head it saw of each tracked branch.
create table git_poll_heads (
  code_source_id text not null references code_sources (id) on delete cascade,
  branch text not null,
  commit_sha text not null,
  polled_at timestamptz not null default now(),
  primary key (code_source_id, branch)
);

-- The commit a stack run checked out: set by its first step (or by the push that triggered it), then
-- every later step and retry of the run uses it.
alter table pipeline_runs add column commit_sha text;
create index stacks_code_source_idx on stacks ((source ->> 'codeSourceId'));
