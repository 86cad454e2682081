-- When worker processes next read a container deployment's service deployment from ECS (its ARN, its
-- status and revisions): due after each deployment event, again while it is in progress.
alter table deployments
  add column service_check_at timestamptz,
  add column service_check_attempts integer not null default 0;
create index deployments_service_due_idx on deployments (service_check_at) where service_check_at is not null;
