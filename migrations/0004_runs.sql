-- Stacks, pipeline runs and step executions: the run engine's state. The job queue (graphile-worker,
-- its own schema) only dispatches; every status lives here. See docs/engine.md.
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
  -- The run that holds the stack (admitted and not finished); later runs wait in FIFO order.
  active_run_id text,
  latest_run_id text,
  output jsonb,
  first_applied_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, given_id)
);
create index stacks_org_id_idx on stacks (organization_id, id);
create index stacks_change_pipeline_idx on stacks (change_pipeline_id);
create index stacks_destroy_pipeline_idx on stacks (destroy_pipeline_id);

create table pipeline_runs (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  pipeline_id text not null references pipelines (id) on delete cascade,
  pipeline_version_id text not null references pipeline_versions (id) on delete cascade,
  stack_id text references stacks (id) on delete cascade,
  status text not null check (status in ('QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  -- plan | apply | destroy for stack runs (docs/engine.md), null for a run of a bare pipeline.
  action text check (action in ('plan', 'apply', 'destroy')),
  autoapprove boolean not null default false,
  description text not null default '',
  input jsonb,
  trigger_metadata jsonb,
  attempt_epoch integer not null default 1,
  -- Set when the run may start steps: at once, or when the stack's previous run finished.
  admitted_at timestamptz,
  created_by_id text,
  started_at timestamptz,
  completed_at timestamptz,
  last_attempt_started_at timestamptz,
  error jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index pipeline_runs_org_id_idx on pipeline_runs (organization_id, id);
create index pipeline_runs_pipeline_idx on pipeline_runs (pipeline_id, id);
create index pipeline_runs_stack_idx on pipeline_runs (stack_id, id);
-- The stack queue: the oldest run of a stack still waiting for admission.
create index pipeline_runs_stack_waiting_idx on pipeline_runs (stack_id, id) where status = 'QUEUED' and admitted_at is null;

create table step_executions (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  pipeline_run_id text not null references pipeline_runs (id) on delete cascade,
  step_id text not null,
  step_name text not null,
  step_type text not null,
  status text not null check (status in ('QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'SKIPPED')),
  attempt_epoch integer not null,
  retry_attempt integer not null default 0,
  is_last_retry boolean not null default false,
  queue_reason text not null default '',
  input_data jsonb,
  output_data jsonb,
  status_detail jsonb,
  error jsonb,
  -- The graphile-worker job that dispatched this attempt, and when it was (re)dispatched.
  engine_job_id text,
  dispatched_at timestamptz,
  -- The lease: the worker holding a RUNNING attempt renews it by heartbeat; an expired lease means
  -- the worker died, and the reaper fails the attempt over to the retry policy.
  lease_owner text,
  lease_expires_at timestamptz,
  heartbeat_at timestamptz,
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index step_executions_run_idx on step_executions (pipeline_run_id, id);
create index step_executions_org_id_idx on step_executions (organization_id, id);
create index step_executions_lease_idx on step_executions (lease_expires_at) where status = 'RUNNING';
create index step_executions_queued_idx on step_executions (dispatched_at) where status = 'QUEUED';

-- Step output, one row per line, numbered from 1 per step execution.
create table step_logs (
  step_execution_id text not null references step_executions (id) on delete cascade,
  seq integer not null,
  stream text not null check (stream in ('stdout', 'stderr', 'system')),
  line text not null,
  created_at timestamptz not null default now(),
  primary key (step_execution_id, seq)
);

-- Append-only history: one row per status change of a run or a step, written in the same
-- transaction as the change itself.
create table run_transitions (
  id bigserial primary key,
  pipeline_run_id text not null references pipeline_runs (id) on delete cascade,
  step_execution_id text,
  from_status text,
  to_status text not null,
  reason text not null,
  actor text,
  created_at timestamptz not null default now()
);
create index run_transitions_run_idx on run_transitions (pipeline_run_id, id);
