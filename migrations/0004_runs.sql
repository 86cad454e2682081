-- Stacks, pipeline runs and step executions: the run engine's state. The job queue only dispatches.
create table stacks (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  project_id text not null references projects (id),
  environment_id text not null references environments (id),
  given_id text,
  name text not null,
  type text not null default 'OPENTOFU',
  source jsonb,
  variables jsonb not null default '{}',
  change_pipeline_id text not null references pipelines (id),
  destroy_pipeline_id text not null references pipelines (id),
  latest_run_id text,
  output jsonb,
  first_applied_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, given_id)
);
create index stacks_org_id_idx on stacks (organization_id, id);

create table pipeline_runs (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  pipeline_id text not null references pipelines (id) on delete cascade,
  pipeline_version_id text not null references pipeline_versions (id) on delete cascade,
  stack_id text references stacks (id) on delete cascade,
  status text not null,
  description text not null default '',
  input jsonb,
  attempt_epoch integer not null default 1,
  created_by_id text,
  started_at timestamptz,
  completed_at timestamptz,
  last_attempt_started_at timestamptz,
  error jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index pipeline_runs_org_id_idx on pipeline_runs (organization_id, id);

create table step_executions (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  pipeline_run_id text not null references pipeline_runs (id) on delete cascade,
  step_id text not null,
  step_name text not null,
  step_type text not null,
  status text not null,
  attempt_epoch integer not null,
  retry_attempt integer not null default 0,
  is_last_retry boolean not null default false,
  input_data jsonb,
  output_data jsonb,
  status_detail jsonb,
  error jsonb,
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index step_executions_run_idx on step_executions (pipeline_run_id, id);
