-- When worker processes next read how the service's load balancer sees a running task (its target
-- group snapshot): due when an event says the task runs, again while its health checks are pending.
alter table deployment_resources
  add column target_check_at timestamptz,
  add column target_check_attempts integer not null default 0;
create index deployment_resources_target_due_idx on deployment_resources (target_check_at) where target_check_at is not null;
