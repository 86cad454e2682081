-- Projects, environments, cloud accounts, execution environments, default-value definitions and values.
create table projects (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  given_id text not null,
  name text not null,
  description text,
  error jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, given_id)
);
create index projects_org_id_idx on projects (organization_id, id);

create table cloud_accounts (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  given_id text not null,
  name text not null,
  provider text not null default 'AWS',
  account_id text not null,
  role_arn text not null,
  external_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, given_id)
);
create index cloud_accounts_org_id_idx on cloud_accounts (organization_id, id);

create table execution_environments (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  given_id text not null,
  name text not null,
  type text not null check (type in ('CLOUD', 'LOCAL')),
  cloud_account_id text references cloud_accounts (id),
  region text,
  vpc_id text,
  subnet_id text,
  security_group_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, given_id)
);
create index execution_environments_org_id_idx on execution_environments (organization_id, id);
-- Deleting a cloud account asks which execution environments still use it.
create index execution_environments_cloud_account_idx on execution_environments (cloud_account_id);

create table environments (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  project_id text not null references projects (id),
  given_id text not null,
  name text not null,
  description text,
  execution_environment_id text references execution_environments (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, given_id)
);
create index environments_org_id_idx on environments (organization_id, id);
create index environments_project_idx on environments (project_id, id);
-- Deleting an execution environment asks which environments still use it.
create index environments_execution_environment_idx on environments (execution_environment_id);

create table default_value_definitions (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  given_id text not null,
  name text not null,
  description text,
  schema jsonb not null,
  created_by_type text not null default 'USER' check (created_by_type in ('SYSTEM', 'USER')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, given_id)
);
create index default_value_definitions_org_id_idx on default_value_definitions (organization_id, id);

create table default_values (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  default_value_definition_id text not null references default_value_definitions (id),
  -- An organization, project or environment of the same organization; the nearest scope wins.
  parent_id text not null,
  parent_type text not null check (parent_type in ('ORGANIZATION', 'PROJECT', 'ENVIRONMENT')),
  value jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (default_value_definition_id, parent_id)
);
create index default_values_org_id_idx on default_values (organization_id, id);
-- Keyset pages of the values of one definition or one parent; the resolver reads by parent too.
create index default_values_definition_idx on default_values (default_value_definition_id, id);
create index default_values_parent_idx on default_values (parent_id, id);
