-- OpenTofu stacks (docs/opentofu.md): the http state backend (every version kept, sealed), its lock, the
-- short-lived credentials runs use against it, sensitive stack variables, and the saved plan a run's
-- plan step leaves for its apply step.

-- Every state version ever written to a stack, sealed with the secret box (context
-- `stack_state_versions.state:<id>`); the newest serial is the current state.
create table stack_state_versions (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  stack_id text not null references stacks (id) on delete cascade,
  serial bigint not null,
  lineage text not null,
  md5 text not null,
  size_bytes integer not null,
  -- Managed resource instances the state holds: a stack whose current state holds any is not deleted.
  resource_count integer not null,
  sealed_state text not null,
  -- The run whose credential wrote it (null: an API key from outside a run), and who wrote it.
  run_id text references pipeline_runs (id) on delete set null,
  principal_id text not null,
  created_at timestamptz not null default now(),
  unique (stack_id, serial)
);
create index stack_state_versions_stack_idx on stack_state_versions (stack_id, id);

-- The state lock of a stack: at most one holder; `info` is the lock info OpenTofu sent, returned as is.
create table stack_state_locks (
  stack_id text primary key references stacks (id) on delete cascade,
  organization_id text not null references organizations (id) on delete cascade,
  lock_id text not null,
  info text not null,
  run_id text references pipeline_runs (id) on delete set null,
  principal_id text not null,
  created_at timestamptz not null default now()
);

-- A credential one OpenTofu step of a run uses against its own stack's state: minted by the worker,
-- deleted when the step ends, and refused once it expires or its run is finished.
create table state_run_credentials (
  id text primary key,
  token_hash text not null unique,
  organization_id text not null references organizations (id) on delete cascade,
  stack_id text not null references stacks (id) on delete cascade,
  run_id text not null references pipeline_runs (id) on delete cascade,
  step_execution_id text not null,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index state_run_credentials_run_idx on state_run_credentials (run_id);

-- Sensitive stack variables: write-only, sealed (context `stack_sensitive_variables:<stackId>:<name>`).
create table stack_sensitive_variables (
  stack_id text not null references stacks (id) on delete cascade,
  organization_id text not null references organizations (id) on delete cascade,
  name text not null,
  sealed_value text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (stack_id, name)
);

-- The saved plan of a run's attempt, sealed (context `stack_plans:<runId>:<attemptEpoch>`): the apply
-- step of the same run and attempt applies exactly it, on whichever worker it runs.
create table stack_plans (
  run_id text not null references pipeline_runs (id) on delete cascade,
  attempt_epoch integer not null,
  stack_id text not null references stacks (id) on delete cascade,
  step_execution_id text not null,
  is_destroy boolean not null,
  has_changes boolean not null,
  sealed_plan text not null,
  created_at timestamptz not null default now(),
  primary key (run_id, attempt_epoch)
);
