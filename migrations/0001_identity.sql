-- Organizations, users, memberships, service accounts and API keys: who may call Plinth, and where.
create table organizations (
  id text primary key,
  name text not null,
  billing_email text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table users (
  id text primary key,
  email text not null,
  full_name text,
  short_name text,
  global_role text not null default 'USER',
  password_hash text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));

create table memberships (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  role text not null,
  invited_email text,
  invitation_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, user_id)
);
-- Keyset pages of one organization's memberships walk this index.
create index memberships_org_id_idx on memberships (organization_id, id);
create index memberships_user_idx on memberships (user_id);

create table service_accounts (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  name text not null,
  role text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index service_accounts_org_id_idx on service_accounts (organization_id, id);

create table api_keys (
  id text primary key,
  name text not null,
  -- sha256 of the whole token; the token itself is never stored.
  token_hash text not null unique,
  token_prefix text not null,
  -- A user key acts through a membership; a service-account key acts as that account. Exactly one is set.
  user_id text references users (id) on delete cascade,
  service_account_id text references service_accounts (id) on delete cascade,
  organization_id text not null references organizations (id) on delete cascade,
  created_by_id text,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((user_id is null) <> (service_account_id is null))
);
create index api_keys_org_id_idx on api_keys (organization_id, id);
