-- Deployments (docs/deployments.md): the releases of a module instance, each a module deploy (a run of
-- its stack) or a container-service deployment seen in the cloud events of the instance's AWS account,
-- with the container tasks each one started.

-- The sts:ExternalId Plinth sends when it assumes a cloud account's role is its own, unique to the
-- account, never the caller's choice (a tenant could otherwise name another tenant's role and external
-- id). Nothing assumed a role before, so the ids set until now are replaced.
update cloud_accounts set external_id = 'plinth-' || replace(gen_random_uuid()::text, '-', '');
alter table cloud_accounts alter column external_id set not null;

-- The secret an EventBridge API destination sends with each event, stored as its SHA-256 (it is random
-- and long: no slow hash is needed). During a rotation the previous secret stays valid until its time.
alter table cloud_accounts add column ingest_secret_sha256 bytea;
alter table cloud_accounts add column ingest_secret_created_at timestamptz;
alter table cloud_accounts add column previous_ingest_secret_sha256 bytea;
alter table cloud_accounts add column previous_ingest_secret_expires_at timestamptz;

-- Every event received, once per EventBridge id, and what became of it.
create table cloud_events (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  cloud_account_id text not null references cloud_accounts (id) on delete cascade,
  event_id text not null,
  source text not null,
  detail_type text not null,
  event_time timestamptz not null,
  -- The resource the event is about (a task, service or deployment), when it is one Plinth follows.
  resource_arn text,
  outcome text not null check (outcome in ('APPLIED', 'STALE', 'UNMATCHED', 'UNKNOWN')),
  deployment_id text,
  body jsonb not null,
  received_at timestamptz not null default now(),
  unique (cloud_account_id, event_id)
);
create index cloud_events_org_idx on cloud_events (organization_id, id);

create table deployments (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  project_id text not null references projects (id),
  environment_id text not null references environments (id),
  module_instance_id text not null references module_instances (id) on delete cascade,
  deployment_type text not null check (deployment_type in ('MODULE', 'CONTAINER_SERVICE')),
  status text not null check (status in ('IN_PROGRESS', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  description text not null,
  trigger_source text not null check (trigger_source in ('API', 'ENVIRONMENT_DEPLOY', 'EVENT_BUS', 'REDEPLOY', 'ROLLBACK')),
  cloud_account_id text references cloud_accounts (id) on delete set null,
  -- ECS's id of the service deployment (ecs-svc/…), unique within the AWS account.
  external_deployment_id text,
  resource_arn text,
  resource_name text,
  pipeline_run_id text references pipeline_runs (id) on delete set null,
  redeploy_of_deployment_id text references deployments (id) on delete set null,
  rollback_to_deployment_id text references deployments (id) on delete set null,
  data jsonb,
  error jsonb,
  -- The time of the newest event applied to the status: an older one arriving late changes nothing.
  last_event_at timestamptz,
  -- When worker processes next read the task definition it deploys from ECS (null: read, or nothing to read).
  definition_check_at timestamptz,
  definition_check_attempts integer not null default 0,
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index deployments_external_idx on deployments (cloud_account_id, external_deployment_id) where external_deployment_id is not null;
create index deployments_org_idx on deployments (organization_id, id);
create index deployments_instance_idx on deployments (module_instance_id, id);
create index deployments_environment_idx on deployments (environment_id, id);
create index deployments_run_idx on deployments (pipeline_run_id) where pipeline_run_id is not null;
create index deployments_definition_due_idx on deployments (definition_check_at) where definition_check_at is not null;

-- A container task of a deployment, as its newest event described it (`sequence`: the task event's
-- detail.version, which ECS increments with each change of the task).
create table deployment_resources (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  deployment_id text not null references deployments (id) on delete cascade,
  module_instance_id text references module_instances (id) on delete cascade,
  cloud_account_id text references cloud_accounts (id) on delete set null,
  type text not null check (type in ('CONTAINER_TASK')),
  external_id text not null,
  sequence bigint not null,
  last_status text,
  desired_status text,
  data jsonb not null,
  log_streams jsonb,
  error jsonb,
  started_at timestamptz,
  stopped_at timestamptz,
  first_seen_at timestamptz not null default now(),
  last_event_at timestamptz not null,
  unique (cloud_account_id, external_id)
);
create index deployment_resources_deployment_idx on deployment_resources (deployment_id, id);
create index deployment_resources_org_idx on deployment_resources (organization_id, id);

-- Container-service events find their module instance by the service ARN its stack outputs declare.
-- A hash index: an output is any length, past what a btree entry holds.
create index stacks_ecs_service_arn_idx on stacks using hash ((output ->> 'ecs_service_arn')) where module_instance_id is not null;
